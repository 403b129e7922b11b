#include "fusion.hpp"

#include <algorithm>
#include <cstring>

namespace edgerun::cuda_orin {
namespace {

// Who writes and who reads each value of a graph.
struct ValueUse {
    std::vector<int32_t> producer, readers, reader;
    const er_graph& graph;

    explicit ValueUse(const er_graph& g)
        : producer(size_t(g.n_values), -1), readers(size_t(g.n_values), 0), reader(size_t(g.n_values), -1), graph(g) {
        for (int32_t i = 0; i < g.n_nodes; ++i) {
            const er_node& node = g.nodes[i];
            for (int32_t k = 0; k < node.n_outputs; ++k) producer[size_t(node.outputs[k])] = i;
            for (int32_t k = 0; k < node.n_inputs; ++k) {
                ++readers[size_t(node.inputs[k])];
                reader[size_t(node.inputs[k])] = i;
            }
        }
    }
    // The one node that reads v, if v is read once and not by the host.
    int32_t only_reader(int32_t v) const {
        return readers[size_t(v)] == 1 && !(graph.values[v].flags & ER_VALUE_OUTPUT) ? reader[size_t(v)] : -1;
    }
    // The node of op `op` that produced v, or -1.
    int32_t producer_of(int32_t v, int32_t op) const {
        const int32_t p = producer[size_t(v)];
        return p >= 0 && graph.nodes[p].op == op ? p : -1;
    }
};

// The epilogue a MATMUL's consumer allows.
void find_epilogue(const ValueUse& use, int32_t i, GemvFusion& fusion) {
    const er_node& node = use.graph.nodes[i];
    if (node.op != ER_OP_MATMUL && node.op != ER_OP_MATMUL_MULTI) return;
    const int32_t j = use.only_reader(node.outputs[0]);
    if (j < 0) return;
    const er_node& consumer = use.graph.nodes[j];
    if (node.n_outputs == 1 && consumer.op == ER_OP_ADD) {
        const int32_t v = node.outputs[0];
        const int32_t other = consumer.inputs[0] == v ? consumer.inputs[1] : consumer.inputs[0];
        if (other == v || use.producer[size_t(other)] >= i) return;  // the residual must exist before the GEMV
        fusion.kind = GemvFusion::kResidual;
        fusion.consumer = j;
        fusion.residual = other;
    } else if (node.n_outputs == 2 && consumer.op == ER_OP_SWIGLU && consumer.inputs[0] == node.outputs[0] &&
               consumer.inputs[1] == node.outputs[1] && use.only_reader(node.outputs[1]) == j) {
        fusion.kind = GemvFusion::kSwiGLU;
        fusion.consumer = j;
    }
}

bool is_gemv(const er_node& node) {
    return node.op == ER_OP_MATMUL || node.op == ER_OP_MATMUL_MULTI || node.op == ER_OP_LOGITS;
}

// The whole-row RMS_NORM whose result only this GEMV reads.
int32_t find_norm_prologue(const ValueUse& use, int32_t i) {
    const er_node& node = use.graph.nodes[i];
    if (!is_gemv(node)) return -1;
    const int32_t x = node.inputs[0];
    const int32_t norm = use.producer_of(x, ER_OP_RMS_NORM);
    if (norm < 0 || use.only_reader(x) != i) return -1;
    const int32_t group = use.graph.nodes[norm].params.rms_norm.group;
    return group == use.graph.values[x].width ? norm : -1;
}

bool same_rope(const er_node& a, const er_node& b) {
    return std::memcmp(&a.params.rope, &b.params.rope, sizeof(er_rope_params)) == 0 && a.weights[0] == b.weights[0];
}

// The ROPE (and per-head RMS_NORM before it) feeding an attention input read by the
// attention alone: the ROPE node, the norm node or -1, and the value before both.
struct RopeChain {
    int32_t rope = -1, norm = -1, source = -1;
};
RopeChain rope_chain(const ValueUse& use, int32_t attention, int32_t v, int32_t head_dim) {
    RopeChain chain;
    chain.rope = use.producer_of(v, ER_OP_ROPE);
    if (chain.rope < 0 || use.only_reader(v) != attention) return {};
    chain.source = use.graph.nodes[chain.rope].inputs[0];
    const int32_t norm = use.producer_of(chain.source, ER_OP_RMS_NORM);
    if (norm >= 0 && use.only_reader(chain.source) == chain.rope &&
        use.graph.nodes[norm].params.rms_norm.group == head_dim) {
        chain.norm = norm;
        chain.source = use.graph.nodes[norm].inputs[0];
    }
    return chain;
}

AttentionFusion find_attention_fusion(const ValueUse& use, int32_t a) {
    const er_graph& g = use.graph;
    const er_node& node = g.nodes[a];
    if (node.op != ER_OP_ATTENTION) return {};
    const int32_t head_dim = node.params.attention.head_dim_k;
    const RopeChain q = rope_chain(use, a, node.inputs[0], head_dim);
    const RopeChain k = rope_chain(use, a, node.inputs[1], head_dim);
    if (q.rope < 0 || k.rope < 0 || q.rope == k.rope || !same_rope(g.nodes[q.rope], g.nodes[k.rope]) ||
        g.nodes[q.rope].params.rope.head_dim != head_dim)
        return {};
    // q is rotated where it lies: nobody else may read that value, the host included.
    const int32_t q_first_reader = q.norm >= 0 ? q.norm : q.rope;
    if (use.only_reader(q.source) != q_first_reader || (g.values[q.source].flags & ER_VALUE_INPUT)) return {};
    if (q.norm >= 0 && k.norm >= 0 && g.nodes[q.norm].params.rms_norm.eps != g.nodes[k.norm].params.rms_norm.eps)
        return {};
    const int32_t v = node.inputs[2];
    const int32_t qkv = use.producer_of(q.source, ER_OP_MATMUL_MULTI);
    const bool from_qkv = qkv >= 0 && g.nodes[qkv].n_outputs == 3 && g.nodes[qkv].outputs[0] == q.source &&
                          g.nodes[qkv].outputs[1] == k.source && g.nodes[qkv].outputs[2] == v;
    return {q.rope, k.rope, q.norm, k.norm, q.source, k.source, from_qkv ? qkv : -1};
}

// What GEMV i multiplies: its input, or its norm's.
int32_t gemv_x(const er_graph& g, const Fusions& f, int32_t i) {
    const int32_t norm = f.gemv[size_t(i)].norm;
    return norm >= 0 ? g.nodes[norm].inputs[0] : g.nodes[i].inputs[0];
}

// The GEMV whose launch writes v: through its residual or SwiGLU epilogue, or as its one
// product without one; -1 when none does.
int32_t gemv_writing(const ValueUse& use, const Fusions& f, int32_t v) {
    const int32_t p = use.producer[size_t(v)];
    if (p < 0) return -1;
    const er_node& node = use.graph.nodes[p];
    if (node.op == ER_OP_ADD || node.op == ER_OP_SWIGLU) {
        const int32_t by = f.absorbed_by[size_t(p)];
        return by >= 0 && f.gemv[size_t(by)].consumer == p ? by : -1;
    }
    return node.op == ER_OP_MATMUL && node.n_outputs == 1 && f.gemv[size_t(p)].kind == GemvFusion::kNone ? p : -1;
}

// Pairs of a GEMV and the one GEMV reading what it writes, in node order, each given the
// slot of buffers whose last reader ran before it; a pair that finds none is left out.
void find_q8_handoffs(const ValueUse& use, Fusions& f) {
    const er_graph& g = use.graph;
    std::vector<int32_t> gemv_readers(size_t(g.n_values), 0);
    for (int32_t i = 0; i < g.n_nodes; ++i)
        if (is_gemv(g.nodes[i])) ++gemv_readers[size_t(gemv_x(g, f, i))];
    int32_t slot_read_until[2] = {-1, -1};
    for (int32_t reader = 0; reader < g.n_nodes; ++reader) {
        if (!is_gemv(g.nodes[reader])) continue;
        const int32_t x = gemv_x(g, f, reader);
        const int32_t maker = gemv_writing(use, f, x);
        if (gemv_readers[size_t(x)] != 1 || maker < 0 || maker >= reader || f.gemv[size_t(maker)].q8_reader >= 0)
            continue;
        const int32_t slot = slot_read_until[0] < maker ? 0 : slot_read_until[1] < maker ? 1 : -1;
        if (slot < 0) continue;
        slot_read_until[slot] = reader;
        f.gemv[size_t(maker)].q8_reader = reader;
        f.gemv[size_t(maker)].q8_slot = slot;
        f.gemv[size_t(reader)].q8_maker = maker;
    }
}

// AttentionFusion::q8_reader and GemvFusion::q8_merge. No GEMV between the two: the merge
// writes into the buffers every prepare writes, which the reader then reads.
void find_merge_q8_readers(const ValueUse& use, Fusions& f) {
    const er_graph& g = use.graph;
    for (int32_t i = 0; i < g.n_nodes; ++i) {
        if (g.nodes[i].op != ER_OP_ATTENTION) continue;
        const int32_t out = g.nodes[i].outputs[0], reader = use.only_reader(out);
        if (reader < 0 || (g.nodes[reader].op != ER_OP_MATMUL && g.nodes[reader].op != ER_OP_MATMUL_MULTI) ||
            g.nodes[reader].inputs[0] != out || f.gemv[size_t(reader)].norm >= 0)
            continue;
        bool gemv_between = false;
        for (int32_t j = i + 1; j < reader; ++j) gemv_between = gemv_between || is_gemv(g.nodes[j]);
        if (gemv_between) continue;
        f.attention[size_t(i)].q8_reader = reader;
        f.gemv[size_t(reader)].q8_merge = i;
    }
}

}  // namespace

Fusions find_fusions(const er_graph& graph) {
    const ValueUse use(graph);
    const size_t n_nodes = size_t(graph.n_nodes);
    Fusions f{std::vector<GemvFusion>(n_nodes), std::vector<AttentionFusion>(n_nodes), std::vector<int32_t>(n_nodes, -1)};
    for (int32_t i = 0; i < graph.n_nodes; ++i) {
        GemvFusion& gemv = f.gemv[size_t(i)];
        find_epilogue(use, i, gemv);
        gemv.norm = find_norm_prologue(use, i);
        if (gemv.kind != GemvFusion::kNone) f.absorbed_by[size_t(gemv.consumer)] = i;
        if (gemv.norm >= 0) f.absorbed_by[size_t(gemv.norm)] = i;
        const AttentionFusion attention = find_attention_fusion(use, i);
        if (attention.q_rope < 0) continue;
        f.attention[size_t(i)] = attention;
        if (attention.qkv >= 0) f.gemv[size_t(attention.qkv)].rope_append = i;
        for (int32_t absorbed : {attention.q_rope, attention.k_rope, attention.q_norm, attention.k_norm})
            if (absorbed >= 0) f.absorbed_by[size_t(absorbed)] = i;
    }
    find_q8_handoffs(use, f);
    find_merge_q8_readers(use, f);
    return f;
}

std::vector<int32_t> extend_fused_lifetimes(const er_graph& graph, const Fusions& fusions,
                                            std::vector<int32_t> last_use) {
    auto keep_until = [&](int32_t v, int32_t node) { last_use[size_t(v)] = std::max(last_use[size_t(v)], node); };
    for (int32_t i = 0; i < graph.n_nodes; ++i) {
        const GemvFusion& gemv = fusions.gemv[size_t(i)];
        const int32_t end = gemv.kind != GemvFusion::kNone ? gemv.consumer : i;
        if (gemv.kind != GemvFusion::kNone) keep_until(graph.nodes[i].inputs[0], end);
        if (gemv.norm >= 0) keep_until(graph.nodes[gemv.norm].inputs[0], end);
        const AttentionFusion& attention = fusions.attention[size_t(i)];
        if (attention.q_rope < 0) continue;
        keep_until(attention.q, i);
        keep_until(attention.k, i);
    }
    return last_use;
}

}  // namespace edgerun::cuda_orin
