// Building the graphs handed to backends (abi.h, "graph"): an owning container, a
// builder that checks shapes as nodes are added, and the coverage check that names
// every op a backend lacks before anything runs.
#pragma once

#include <edgerun/abi.h>

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

namespace edgerun {

// The weights a model's graphs refer to by index (abi.h: er_model_params.weights).
class WeightTable {
public:
    WeightTable() = default;
    explicit WeightTable(std::vector<er_tensor_desc> tensors);

    const std::vector<er_tensor_desc>& tensors() const { return tensors_; }
    const er_tensor_desc& operator[](int32_t index) const { return tensors_.at(index); }
    int32_t size() const { return static_cast<int32_t>(tensors_.size()); }

    int32_t find(const std::string& name) const;     // -1 when absent
    int32_t require(const std::string& name) const;  // throws Error naming the tensor

private:
    std::vector<er_tensor_desc> tensors_;
    std::unordered_map<std::string, int32_t> index_;
};

struct Graph {
    int32_t max_tokens = 1;
    std::vector<er_node> nodes;
    std::vector<er_value_desc> values;
    int32_t tokens_input = -1;   // I32 token ids, when the graph starts from tokens
    int32_t logits_output = -1;  // the LOGITS value, when it ends in one

    er_graph view() const {
        return er_graph{sizeof(er_graph), max_tokens, static_cast<int32_t>(nodes.size()), nodes.data(),
                        static_cast<int32_t>(values.size()), values.data()};
    }

    // What a runner steps: token ids in, logits out. Throws naming the graph (`which`).
    void require_tokens_to_logits(const char* which) const;
};

// One weight (and optional bias) of a multi-output matmul.
struct Projection {
    int32_t weight;
    int32_t bias = -1;
};

class GraphBuilder {
public:
    GraphBuilder(const WeightTable& weights, int32_t max_tokens);

    int32_t tokens();                  // the I32 token-id input
    int32_t input(int64_t width);      // an F32 input (op tests feed activations directly)
    void mark_output(int32_t value);

    int32_t embed(int32_t tokens, int32_t table);
    int32_t matmul(int32_t x, int32_t weight, int32_t bias = -1);
    std::vector<int32_t> matmul_multi(int32_t x, std::initializer_list<Projection> projections);
    int32_t rms_norm(int32_t x, int32_t weight, float eps);           // over the whole row
    int32_t rms_norm_heads(int32_t x, int32_t weight, float eps);     // per head: group = weight length
    int32_t rope(int32_t x, const er_rope_params& params, int32_t freq_factors = -1);
    int32_t attention(int32_t q, int32_t k, int32_t v, int32_t layer, const er_attention_params& params);
    int32_t swiglu(int32_t gate, int32_t up);
    int32_t add(int32_t a, int32_t b);
    int32_t logits(int32_t x, int32_t weight);  // also marks the graph's output

    // Sets the layer recorded on nodes added from now on (for traces and reports).
    void set_layer(int32_t layer) { layer_ = layer; }

    Graph finish();

private:
    int32_t new_value(int32_t type, int64_t width);
    er_node& new_node(int32_t op);
    int64_t width(int32_t value) const;
    int64_t weight_rows(int32_t weight) const;  // output width of a matmul against it
    void check_matmul(int32_t x, int32_t weight, int32_t bias) const;

    const WeightTable& weights_;
    Graph graph_;
    int32_t layer_ = -1;
};

const char* op_name(int32_t op);


}  // namespace edgerun
