#include <edgerun/authoring/model_recipe.hpp>

#include <edgerun/host_api.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>

namespace edgerun::authoring {

namespace {

using FT = FileType;

const std::vector<FileTypeInfo> kFileTypes = {
    {FT::ALL_F32, "F32", DType::F32},          {FT::MOSTLY_F16, "F16", DType::F16},
    {FT::MOSTLY_BF16, "BF16", DType::BF16},    {FT::MOSTLY_Q4_0, "Q4_0", DType::Q4_0},
    {FT::MOSTLY_Q4_1, "Q4_1", DType::Q4_1},    {FT::MOSTLY_Q5_0, "Q5_0", DType::Q5_0},
    {FT::MOSTLY_Q5_1, "Q5_1", DType::Q5_1},    {FT::MOSTLY_Q8_0, "Q8_0", DType::Q8_0},
    {FT::MOSTLY_Q4_K_S, "Q4_K_S", DType::Q4_K}, {FT::MOSTLY_Q4_K_M, "Q4_K_M", DType::Q4_K},
    {FT::MOSTLY_Q5_K_S, "Q5_K_S", DType::Q5_K}, {FT::MOSTLY_Q5_K_M, "Q5_K_M", DType::Q5_K},
    {FT::MOSTLY_Q6_K, "Q6_K", DType::Q6_K},
};

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

enum class Category { TokenEmbd, AttnQ, AttnV, AttnK, AttnQkv, AttnKvB, AttnOutput, FfnUp, FfnGate, FfnDown, Output, Other };

Category category_of(std::string_view name) {
    if (name == "output.weight") return Category::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
    if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
    if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
    if (contains(name, "attn_v.weight")) return Category::AttnV;
    if (contains(name, "attn_k.weight")) return Category::AttnK;
    if (contains(name, "attn_q.weight")) return Category::AttnQ;
    if (contains(name, "attn_output.weight")) return Category::AttnOutput;
    if (contains(name, "ffn_up")) return Category::FfnUp;
    if (contains(name, "ffn_gate")) return Category::FfnGate;
    if (contains(name, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

// attn_v and the fused tensors that contain it are the most sensitive to quantization.
bool is_attn_v_like(Category c) { return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB; }

// The layers llama.cpp gives more bits: the first and last eighth, and every third between.
bool use_more_bits(int64_t i_layer, int64_t n_layer) {
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

int32_t block_elems(DType t) { return dtype_info(t)->block_elems; }

// llama.cpp visits tensors ordered by layer number, then name; its counters (which
// attn_v this is) follow that order, not the file's (where blk.10 may precede blk.2).
int layer_of(const std::string& name) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
    return layer;
}

class Planner {
public:
    Planner(const std::vector<TensorInfo>& tensors, const RecipeParams& params) : params_(params) {
        for (const TensorInfo& t : tensors) {
            const Category c = category_of(t.name);
            if (is_attn_v_like(c)) ++n_attention_wv_;
            if (c == Category::Output) tied_embeddings_ = false;
        }
        is_70b_ = params.arch == "llama" && params.n_layer == 80 && params.n_head != params.n_head_kv;
    }

    DType choose(const TensorInfo& t, DType default_type) {
        DType type = default_type;
        if (!dtype_info(default_type)->quantized) return type;
        if (!params_.pure) type = by_role(t, type);
        return fall_back_by_shape(t, type);
    }

private:
    bool falcon() const { return params_.arch == "falcon"; }
    FT ftype() const { return params_.file_type; }

    std::pair<int64_t, int64_t> layer_info(int64_t counter, const std::string& name) const {
        if (params_.n_expert > 1) {  // expert tensors are not in layer order: read the name
            const int layer = layer_of(name);
            if (layer < 0 || layer >= params_.n_layer)
                throw Error("cannot tell the layer of tensor " + name, ER_E_FORMAT);
            return {layer, params_.n_layer};
        }
        return {counter, params_.n_layer};
    }

    DType by_role(const TensorInfo& t, DType type) {
        const Category c = category_of(t.name);
        if (c == Category::Output || (tied_embeddings_ && c == Category::TokenEmbd)) {
            // The output matrix (or the embedding that doubles as it) gets more bits.
            if (falcon() || t.ne[0] % block_elems(type) != 0) return DType::Q8_0;
            return type != DType::Q8_0 ? DType::Q6_K : type;
        }
        if (c == Category::TokenEmbd) return type;
        if (is_attn_v_like(c)) {
            if ((ftype() == FT::MOSTLY_Q4_K_M || ftype() == FT::MOSTLY_Q5_K_M) &&
                use_more_bits(i_attention_wv_, n_attention_wv_))
                type = DType::Q6_K;
            else if (ftype() == FT::MOSTLY_Q4_K_S && i_attention_wv_ < 4)
                type = DType::Q5_K;
            // A 70B llama shares each attn_v across 8 heads: it is small, give it bits.
            if (is_70b_ && (type == DType::Q3_K || type == DType::Q4_K)) type = DType::Q5_K;
            if (params_.n_expert == 8) type = DType::Q8_0;
            ++i_attention_wv_;
            return type;
        }
        if (c == Category::AttnK) return params_.n_expert == 8 ? DType::Q8_0 : type;
        if (c == Category::FfnDown) {
            const auto [i_layer, n_layer] = layer_info(i_ffn_down_, t.name);
            if (ftype() == FT::MOSTLY_Q4_K_M) {
                if (falcon())
                    type = i_layer < n_layer / 16 ? DType::Q6_K
                           : use_more_bits(i_layer, n_layer) ? DType::Q5_K : DType::Q4_K;
                else if (use_more_bits(i_layer, n_layer))
                    type = DType::Q6_K;
            } else if (ftype() == FT::MOSTLY_Q5_K_M && use_more_bits(i_layer, n_layer)) {
                type = DType::Q6_K;
            } else if (ftype() == FT::MOSTLY_Q4_K_S && !falcon() && i_layer < n_layer / 8) {
                type = DType::Q5_K;
            }
            ++i_ffn_down_;
            return type;
        }
        if (c == Category::AttnOutput && !falcon() && params_.n_expert == 8 &&
            (ftype() == FT::MOSTLY_Q4_K_S || ftype() == FT::MOSTLY_Q4_K_M))
            return DType::Q5_K;
        return type;
    }

    // A row whose length is not a whole number of blocks takes a type with smaller blocks.
    // llama.cpp has no fallback for the 32-wide types and stops; F16 is its last resort
    // for the others, and ours for all.
    static DType fall_back_by_shape(const TensorInfo& t, DType type) {
        if (t.ne[0] % block_elems(type) == 0) return type;
        switch (type) {
            case DType::Q2_K: case DType::Q3_K: type = DType::Q4_0; break;
            case DType::Q4_K: type = DType::Q5_0; break;
            case DType::Q5_K: type = DType::Q5_1; break;
            case DType::Q6_K: type = DType::Q8_0; break;
            default: type = DType::F16; break;
        }
        return t.ne[0] % block_elems(type) == 0 ? type : DType::F16;
    }

    RecipeParams params_;
    bool tied_embeddings_ = true;
    bool is_70b_ = false;
    int64_t n_attention_wv_ = 0, i_attention_wv_ = 0, i_ffn_down_ = 0;
};

}  // namespace

const std::vector<FileTypeInfo>& file_types() { return kFileTypes; }

std::optional<FileTypeInfo> file_type_from_name(std::string_view name) {
    for (const FileTypeInfo& f : kFileTypes)
        if (same_name(f.name, name)) return f;
    return std::nullopt;
}

std::optional<FileTypeInfo> pure_file_type_from_name(std::string_view name) {
    if (auto f = file_type_from_name(name)) return f;
    const auto type = dtype_from_name(name);
    if (!type) return std::nullopt;
    // The file type llama-quantize records for a pure file of this type: the _M mix for
    // K-quants (their names end in _S/_M; the tensor types do not).
    for (FT id : {FT::ALL_F32, FT::MOSTLY_F16, FT::MOSTLY_BF16, FT::MOSTLY_Q4_0, FT::MOSTLY_Q4_1, FT::MOSTLY_Q5_0,
                  FT::MOSTLY_Q5_1, FT::MOSTLY_Q8_0, FT::MOSTLY_Q4_K_M, FT::MOSTLY_Q5_K_M, FT::MOSTLY_Q6_K})
        for (const FileTypeInfo& f : kFileTypes)
            if (f.id == id && f.default_type == *type) return f;
    return std::nullopt;
}

std::string file_type_names() {
    std::string out;
    for (const FileTypeInfo& f : kFileTypes) out += (out.empty() ? "" : ", ") + std::string(f.name);
    return out;
}

bool tensor_is_quantizable(const TensorInfo& tensor, std::string_view arch) {
    (void)arch;  // the positional-embedding names below are the same for every arch we know
    if (tensor.n_dims < 2) return false;
    const std::string_view name = tensor.name;
    if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
    // Norms, routers, position tables and other small or index-like weights stay as
    // they are (the list llama.cpp keeps).
    static const std::string_view kKeep[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
        "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
        "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
        "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
        "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"};
    for (std::string_view part : kKeep)
        if (contains(name, part)) return false;
    return name != "position_embd.weight" && name != "token_types.weight";
}

std::vector<int32_t> plan_tensor_types(const std::vector<TensorInfo>& tensors, const RecipeParams& params) {
    const FileTypeInfo* info = nullptr;
    for (const FileTypeInfo& f : kFileTypes)
        if (f.id == params.file_type) info = &f;
    if (!info) throw Error("unsupported file type " + std::to_string(int32_t(params.file_type)), ER_E_INVALID_ARGUMENT);

    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
        return la != lb ? la < lb : tensors[a].name < tensors[b].name;
    });

    Planner planner(tensors, params);
    std::vector<int32_t> types(tensors.size());
    for (size_t i : order) {
        const TensorInfo& t = tensors[i];
        types[i] = tensor_is_quantizable(t, params.arch) ? int32_t(planner.choose(t, info->default_type)) : t.dtype;
    }
    return types;
}

}  // namespace edgerun::authoring
