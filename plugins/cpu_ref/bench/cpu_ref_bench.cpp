// cpu_ref_bench: prefill and decode speed of the cpu_ref plugin on a real GGUF model,
// for comparison with llama.cpp (llama_cpp_bench.py, same threads and token counts).
// Optionally writes the logits of a fixed token sequence for compare_llama_cpp.py.
//
//   cpu_ref_bench MODEL.gguf [--threads 2] [--prompt 512] [--gen 128] [--repeat 3]
//                 [--kv f32|f16|q8] [--options isa=generic] [--dump-logits OUT.bin --tokens 1,2,3]
//
// It reads the file with its own minimal GGUF parser (header, metadata, tensor table;
// little-endian v3 only), a stand-in until the formats_gguf plugin lands; the graph
// comes from the core's architecture builders, the steps from edgerun::Runner.
#include <edgerun/dtype.hpp>
#include <edgerun/model.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/runner.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace edgerun;

struct GgufFile {
    const uint8_t* base = nullptr;
    size_t size = 0;
    std::map<std::string, double> numbers;
    std::map<std::string, std::string> strings;
    std::vector<std::string> names;  // storage for er_tensor_desc::name
    std::vector<er_tensor_desc> tensors;
};

class Reader {
public:
    Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
    template <typename T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, p_, sizeof v);
        p_ += sizeof v;
        return v;
    }
    std::string str() {
        const uint64_t n = get<uint64_t>();
        need(n);
        std::string s(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        return s;
    }
    void skip(uint64_t n) { need(n), p_ += n; }
    size_t offset(const uint8_t* base) const { return size_t(p_ - base); }

private:
    void need(uint64_t n) {
        if (n > uint64_t(end_ - p_)) throw std::runtime_error("truncated GGUF file");
    }
    const uint8_t* p_;
    const uint8_t* end_;
};

// Reads one metadata value of `type`; numbers and strings are kept, arrays skipped.
void read_value(Reader& r, uint32_t type, const std::string& key, GgufFile& f) {
    static const int sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    switch (type) {
        case 0: f.numbers[key] = r.get<uint8_t>(); break;
        case 1: f.numbers[key] = r.get<int8_t>(); break;
        case 2: f.numbers[key] = r.get<uint16_t>(); break;
        case 3: f.numbers[key] = r.get<int16_t>(); break;
        case 4: f.numbers[key] = r.get<uint32_t>(); break;
        case 5: f.numbers[key] = r.get<int32_t>(); break;
        case 6: f.numbers[key] = r.get<float>(); break;
        case 7: f.numbers[key] = r.get<uint8_t>(); break;
        case 8: f.strings[key] = r.str(); break;
        case 9: {
            const uint32_t item = r.get<uint32_t>();
            const uint64_t n = r.get<uint64_t>();
            if (item == 8)
                for (uint64_t i = 0; i < n; ++i) r.str();
            else if (item < 13 && sizes[item] > 0)
                r.skip(n * sizes[item]);
            else
                throw std::runtime_error("nested GGUF arrays are not read by this bench");
            break;
        }
        case 10: f.numbers[key] = double(r.get<uint64_t>()); break;
        case 11: f.numbers[key] = double(r.get<int64_t>()); break;
        case 12: f.numbers[key] = r.get<double>(); break;
        default: throw std::runtime_error("unknown GGUF value type " + std::to_string(type));
    }
}

GgufFile open_gguf(const std::string& path) {
    GgufFile f;
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) throw std::runtime_error("cannot open " + path);
    struct stat st {};
    fstat(fd, &st);
    f.size = size_t(st.st_size);
    void* map = mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    f.base = static_cast<const uint8_t*>(map);
    Reader r(f.base, f.size);
    if (r.get<uint32_t>() != 0x46554747u) throw std::runtime_error(path + " is not a GGUF file");
    if (r.get<uint32_t>() != 3) throw std::runtime_error("only GGUF v3 is read by this bench");
    const uint64_t n_tensors = r.get<uint64_t>(), n_kv = r.get<uint64_t>();
    for (uint64_t i = 0; i < n_kv; ++i) {
        const std::string key = r.str();
        read_value(r, r.get<uint32_t>(), key, f);
    }
    struct Info {
        uint32_t n_dims, type;
        uint64_t ne[4], offset;
    };
    std::vector<Info> infos(n_tensors);
    f.names.resize(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
        f.names[i] = r.str();
        Info& t = infos[i];
        t.n_dims = r.get<uint32_t>();
        if (t.n_dims < 1 || t.n_dims > 4) throw std::runtime_error("bad tensor rank");
        for (int d = 0; d < 4; ++d) t.ne[d] = d < int(t.n_dims) ? r.get<uint64_t>() : 1;
        t.type = r.get<uint32_t>();
        t.offset = r.get<uint64_t>();
    }
    const uint64_t align = f.numbers.count("general.alignment") ? uint64_t(f.numbers["general.alignment"]) : 32;
    const uint64_t data = (r.offset(f.base) + align - 1) / align * align;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        const Info& t = infos[i];
        er_tensor_desc d{};
        d.name = er_str{f.names[i].data(), f.names[i].size()};
        d.dtype = int32_t(t.type);
        d.n_dims = int32_t(t.n_dims);
        for (int k = 0; k < 4; ++k) d.ne[k] = int64_t(t.ne[k]);
        const auto row = row_bytes(d.dtype, d.ne[0]);
        if (!row) throw std::runtime_error("tensor " + f.names[i] + " has an unknown type or shape");
        d.nbytes = *row * t.ne[1] * t.ne[2] * t.ne[3];
        d.file_offset = data + t.offset;
        if (d.file_offset + d.nbytes > f.size) throw std::runtime_error("tensor " + f.names[i] + " runs past the file");
        d.data = f.base + d.file_offset;
        f.tensors.push_back(d);
    }
    return f;
}

HParams hparams_of(GgufFile& f) {
    auto desc = sized<er_model_desc>();
    const std::string arch = f.strings["general.architecture"];
    std::snprintf(desc.arch, sizeof desc.arch, "%s", arch.c_str());
    auto num = [&](const std::string& key) { return f.numbers.count(arch + "." + key) ? f.numbers[arch + "." + key] : 0.0; };
    desc.n_embd = int64_t(num("embedding_length"));
    desc.n_layer = int64_t(num("block_count"));
    desc.n_head = int64_t(num("attention.head_count"));
    desc.n_head_kv = int64_t(num("attention.head_count_kv"));
    desc.head_dim_k = int64_t(num("attention.key_length"));
    desc.head_dim_v = int64_t(num("attention.value_length"));
    desc.n_ff = int64_t(num("feed_forward_length"));
    desc.n_rot = int64_t(num("rope.dimension_count"));
    desc.n_ctx_train = int64_t(num("context_length"));
    desc.rms_eps = float(num("attention.layer_norm_rms_epsilon"));
    desc.rope_freq_base = float(num("rope.freq_base"));
    desc.rope_freq_scale = 1.0f;
    desc.n_vocab = int64_t(num("vocab_size"));
    for (const auto& t : f.tensors)
        if (to_view(t.name) == "token_embd.weight" && desc.n_vocab == 0) desc.n_vocab = t.ne[1];
    return hparams_from_desc(desc);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds used by the whole process (all threads): on a machine shared with other
// jobs, tokens per CPU second says more about the code than wall time does.
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) try {
    if (argc < 2) {
        std::fprintf(stderr, "usage: cpu_ref_bench MODEL.gguf [--threads N] [--prompt N] [--gen N] [--repeat N] "
                             "[--kv f32|f16|q8] [--dump-logits OUT --tokens a,b,c]\n");
        return 2;
    }
    const std::string path = argv[1];
    int threads = 2, n_prompt = 512, n_gen = 128, repeat = 3;
    int32_t kv_type = ER_KV_F16;
    std::string dump, token_list, options;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--threads") threads = std::stoi(value);
        else if (flag == "--prompt") n_prompt = std::stoi(value);
        else if (flag == "--gen") n_gen = std::stoi(value);
        else if (flag == "--repeat") repeat = std::stoi(value);
        else if (flag == "--kv") kv_type = value == "f32" ? ER_KV_F32 : value == "q8" ? ER_KV_Q8 : ER_KV_F16;
        else if (flag == "--dump-logits") dump = value;
        else if (flag == "--options") options = value;
        else if (flag == "--tokens") token_list = value;
        else throw std::runtime_error("unknown flag " + flag);
    }

    GgufFile file = open_gguf(path);
    const HParams hp = hparams_of(file);
    const WeightTable weights(file.tensors);
    const Architecture& arch = find_architecture(hp.arch);
    PluginRegistry registry;
    registry.load_file(std::string(EDGERUN_BUILD_PLUGIN_DIR) + "/libedgerun_cpu_ref.so");
    const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, "cpu_ref");
    if (!plugin) throw std::runtime_error("cpu_ref plugin not found");
    auto bp = sized<er_backend_params>();
    bp.n_threads = threads;
    bp.options = options.empty() ? nullptr : options.c_str();
    Backend backend(*plugin, bp);
    auto mp = sized<er_model_params>();
    mp.weights = weights.tensors().data();
    mp.n_weights = weights.size();
    BackendModel model(backend, mp);

    const int32_t n_batch = std::max(1, n_prompt);
    auto cp = sized<er_context_params>();
    cp.n_ctx = n_prompt + n_gen + 16;
    cp.n_batch = n_batch;
    cp.kv_type = kv_type;
    cp.n_layer = int32_t(hp.n_layer);
    cp.n_head_kv = int32_t(hp.n_head_kv);
    cp.head_dim_k = int32_t(hp.head_dim_k);
    cp.head_dim_v = int32_t(hp.head_dim_v);
    const Graph prefill = arch.build(hp, weights, n_batch), decode = arch.build(hp, weights, 1);

    if (!dump.empty()) {
        std::vector<int32_t> tokens;
        for (size_t at = 0; at < token_list.size();) {
            const size_t comma = token_list.find(',', at);
            tokens.push_back(std::stoi(token_list.substr(at, comma - at)));
            at = comma == std::string::npos ? token_list.size() : comma + 1;
        }
        cp.n_ctx = int32_t(tokens.size()) + 1;
        cp.n_batch = int32_t(tokens.size());
        Runner runner(model, cp, arch.build(hp, weights, cp.n_batch), decode);
        std::vector<float> logits(tokens.size() * hp.n_vocab);
        runner.feed(tokens, logits.data());
        FILE* out = std::fopen(dump.c_str(), "wb");
        if (!out) throw std::runtime_error("cannot write " + dump);
        std::fwrite(logits.data(), sizeof(float), logits.size(), out);
        std::fclose(out);
        std::printf("wrote %zu x %lld logits to %s\n", tokens.size(), (long long)hp.n_vocab, dump.c_str());
        return 0;
    }

    Runner runner(model, cp, prefill, decode);
    std::vector<int32_t> prompt(n_prompt);
    for (int i = 0; i < n_prompt; ++i) prompt[i] = int32_t((uint64_t(i) * 7919 + 13) % uint64_t(hp.n_vocab));
    double best_prefill = 0, best_decode = 0, best_prefill_cpu = 0, best_decode_cpu = 0;
    for (int rep = 0; rep < repeat; ++rep) {
        runner.rewind(0);
        const double t0 = now(), c0 = cpu_now();
        runner.feed(prompt);
        const double t1 = now(), c1 = cpu_now();
        int32_t token = 1;
        for (int i = 0; i < n_gen; ++i) token = runner.feed_greedy(token);
        const double t2 = now(), c2 = cpu_now();
        if (n_prompt > 0) {
            best_prefill = std::max(best_prefill, n_prompt / (t1 - t0));
            best_prefill_cpu = std::max(best_prefill_cpu, n_prompt / (c1 - c0));
        }
        if (n_gen > 0) {
            best_decode = std::max(best_decode, n_gen / (t2 - t1));
            best_decode_cpu = std::max(best_decode_cpu, n_gen / (c2 - c1));
        }
    }
    std::printf("cpu_ref threads=%d kv=%s prefill %d tok: %.1f tok/s, decode %d tok: %.1f tok/s (best of %d; "
                "per CPU-second: prefill %.1f, decode %.1f)\n",
                threads, kv_type == ER_KV_F32 ? "f32" : kv_type == ER_KV_Q8 ? "q8" : "f16", n_prompt, best_prefill,
                n_gen, best_decode, repeat, best_prefill_cpu, best_decode_cpu);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_ref_bench: %s\n", e.what());
    return 1;
}
