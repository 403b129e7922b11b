// cuda_orin's objects behind the ABI (model, context, plan), written against the Device
// interface (device.hpp) only, so the same host code runs on a GPU and, in CI, on the
// CPU emulation of the kernels.
#pragma once

#include "device.hpp"

#include <edgerun/abi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgerun::cuda_orin {

// A debug line: device memory taken since before the CUDA context, after a stage of
// loading or running (`after`), beside what cuda_orin counted so far. The report at a
// plan's end gives only the total; this says which stage takes what nothing predicted
// (the driver's code and launch resources, allocator granularity).
void log_memory_taken(Device& device, const char* after, uint64_t counted);

// Device memory owned by one object, released with it.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(Device& device, uint64_t bytes) : device_(&device), bytes_(bytes), data_(device.allocate(bytes)) {}
    // Device::allocate_host_filled's memory, for the host to fill before handing it over.
    static DeviceBuffer host_filled(Device& device, uint64_t bytes) {
        DeviceBuffer b;
        b.device_ = &device, b.bytes_ = bytes, b.data_ = device.allocate_host_filled(bytes);
        return b;
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        reset();
        device_ = o.device_, bytes_ = o.bytes_, data_ = o.data_;
        o.data_ = nullptr, o.bytes_ = 0;
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { reset(); }

    void* data() const { return data_; }
    template <class T>
    T* as() const { return static_cast<T*>(data_); }
    uint64_t bytes() const { return bytes_; }

private:
    void reset() noexcept {
        if (data_) device_->release(data_);
        data_ = nullptr;
    }
    Device* device_ = nullptr;
    uint64_t bytes_ = 0;
    void* data_ = nullptr;
};

// A range of memory another object owns (the model's weights share one allocation).
class DeviceSpan {
public:
    DeviceSpan() = default;
    DeviceSpan(void* data, uint64_t bytes) : data_(data), bytes_(bytes) {}
    void* data() const { return data_; }
    template <class T>
    T* as() const { return static_cast<T*>(data_); }
    uint64_t bytes() const { return bytes_; }

private:
    void* data_ = nullptr;
    uint64_t bytes_ = 0;
};

struct Backend {
    std::unique_ptr<Device> device;
    bool use_graphs = true;  // option graphs=0 turns capture off
    // Option activations=f32|q8: GEMVs of quantized weights read 8-bit activations (dp4a),
    // except launches of fewer than kQ8ActivationsMinRows outputs; f32: float activations,
    // exact to float rounding like the reference. q8 by default since the H100 run of
    // 2026-11-27 (79562e5, bench/tune_options.py): decode tg64 17-19% faster with x
    // prepared once per GEMV input (Llama-3.2-1B 760 against 640 tok/s, Qwen3-4B 317
    // against 266), within the conformance bounds (~1e-3 relative error in a single dot
    // product, the noise of llama.cpp's own 8-bit activations).
    bool q8_activations = true;
    // Option stage_x=0|1: GEMV blocks copy float x into shared memory first, and with
    // activations=q8 quantize it there themselves (GemvLaunch::quantize_x) rather than
    // reading the 8-bit x one prepare launch made. Unset: staged for float activations
    // (+10-17% on the H200), not for 8-bit ones (every block quantizing the whole row was
    // the slower of the two on the H100: 1.00 against 1.18 times the float defaults).
    std::optional<bool> stage_x;
    bool stages_x() const { return stage_x.value_or(!q8_activations); }
    // Option gemv_rows_per_warp=N (1-8): rows each warp of a one-row GEMV takes, so a
    // block's staging of x serves more rows (GemvLaunch::rows_per_warp); 0, the default:
    // the plan chooses per launch from its shape and the SM count where x is quantized in
    // the stage (choose_rows_per_warp), one elsewhere.
    int32_t gemv_rows_per_warp = 0;
    // Option gemv_tasks_in_flight=2|4: each lane of a one-row GEMV loads two or four tasks
    // of weights before dotting them (GemvLaunch::tasks_in_flight), at two blocks an SM.
    // Off (1) until a GPU measures it.
    int32_t gemv_tasks_in_flight = 1;
    // Option gemv_load_ahead=1: with one task in flight, each lane's first task is loaded
    // before the wait for the previous launch and the staging of x (GemvLaunch::load_ahead).
    bool gemv_load_ahead = false;
    // Option gemv_kernels=generic|typed|typed_4_blocks: one-row GEMVs run the kernel of
    // every type, or a kernel built for their weight type where there is one
    // (GemvLaunch::typed_kernel), at 3 blocks an SM or 4 (typed_blocks_per_sm). Each
    // typed launch ran 11-14% faster alone under Nsight Compute, yet decode on the H100
    // (2026-11-28, 9badf87) was 0.95x generic with typed and 1.005x with typed_4_blocks
    // (bench/results/h100-2026-11-28-9badf87): generic stays the default.
    bool gemv_typed_kernels = false;
    int32_t gemv_typed_blocks_per_sm = 3;
    // Option gemv_pairs=none|swiglu|all: lanes of one-row GEMVs walk two rows at once
    // (GemvLaunch::swiglu_pairs, row_pairs): SwiGLU's gate and up rows, and with `all`
    // two rows of every other launch's output a warp. `all` by default: decode tg64 on
    // the H200 (2026-11-28, e392d98) 1.14x `none`, 1.09x `swiglu`.
    bool gemv_swiglu_pairs = true;
    bool gemv_row_pairs = true;
    // Option gemv_ring=0|2|3: tasks of weights each lane of a pair has on their way into
    // shared memory (GemvLaunch::ring_depth, task_ring.cuh); 0, the default: loads into
    // registers. Not yet run on a GPU (2026-11-28).
    int32_t gemv_ring_depth = 0;
    // Option gemv_warps_per_row=1|2|4|8: warps sharing each GEMV row in every launch
    // (GemvLaunch::asked_warps_per_row); 0, the default: the plan chooses per launch.
    int32_t gemv_warps_per_row = 0;
    // Option fuse=0: every node launched on its own (fusion.hpp's patterns off), to measure
    // what the fusions save and to tell a fused path's fault from an unfused one's.
    bool fuse = true;
    // Option prefetch=1: GEMV warps first ask L2 for their weights (GemvLaunch::prefetch).
    // Off by default: on the H200 (ce74949) decode tg128 was 5% faster without it (Llama-
    // 3.2-1B 637 against 607 tok/s, Qwen3-4B 257 against 247).
    bool prefetch = false;
    // Option pdl=0|1: programmatic dependent launch on GPUs of compute capability 9.0 and
    // later (Device::set_programmatic_launch). Unset: on where the GPU has it, silently
    // off elsewhere; on the H200 it made decode tg128 7-10% faster (Llama-3.2-1B 668
    // against 607 tok/s, Qwen3-4B 263 against 247).
    std::optional<bool> pdl;
    // Option gemm_rows=N: steps of at least N rows multiply through dequantized weight
    // tiles and a GEMM (cuBLAS) instead of the multi-row GEMV; 0 turns that off. On the
    // H200 pp512 took 1461 tok/s without it and 23819-24821 with 32 or 8 (Llama-3.2-1B);
    // the crossover below 32 rows is unmeasured.
    int32_t gemm_rows = 32;
    // Option gemm_tile_kib=N: the device memory the matrix-matrix path dequantizes weight
    // rows into (at least one row of the widest matrix). A matrix larger than the tile is
    // multiplied a tile of rows at a time: a smaller tile saves memory on a small device
    // for more, narrower GEMMs. 64 MiB holds each FFN matrix of Qwen3-4B as halves.
    uint64_t gemm_tile_bytes = uint64_t(64) << 20;
    // Option tiled_attention=N: steps of at least N rows take the tiled attention
    // (kernels/attention_tiles.cu: rows of a sequence share each K/V load, tensor cores)
    // instead of the split kernel's block per row; 0 turns it off. One-row steps always
    // take the split kernel. On the H200 pp512 at depth 4096 took 28004 tok/s with it,
    // 10851 without (Llama-3.2-1B); the crossover below 16 rows is unmeasured.
    int32_t tiled_attention_rows = 16;
    // Option tiled_attention_stages=1|2: the tiled attention's K/V tiles in flight in a
    // block (AttentionParams::tile_stages): with 2 the next tile's copies (cp.async) are on
    // their way while this one is computed; the same values. Qwen3-4B's pp512 at depth
    // 32768 (F16 cache) on the H100 (2026-11-28, 847a064): 6244 tok/s with 1, 6989 with 2;
    // Qwen3-0.6B's 14884 and 16832 (bench/results/h100-2026-11-28-847a064). Unset (0):
    // two over the F16 cache, one over INT8, whose blocks widen each tile's raw bytes after
    // their copies land: cuda_orin_bench's tiled kernel alone (pp512 rows at depths 4096
    // and 32768, H200, e392d98) ran 1.08-1.18x faster with two stages over F16 and
    // 0.84-0.87x over INT8, each model and depth.
    int32_t tiled_attention_stages = 0;
    // Option widen_kv=0|1: a step whose rows are all of one sequence (a prompt chunk) and
    // that takes the tiled attention over an INT8 cache has a launch a layer widen that
    // sequence's K and V to halves first (WidenKvParams; one layer's worth of device
    // memory), and the tiled kernel stages halves from there, instead of each of its blocks
    // widening every K/V tile it reads: 32 blocks a KV head read each tile in a 512-row step
    // of Qwen3-4B. The same outputs bit for bit. The reading: Qwen3's pp512 at depth 32768
    // on the H200 (a7e3b81) ran at 0.82-0.83x llama.cpp's with the Q8_0 cache and
    // 1.08-1.12x with the F16 one. Off until a GPU measures it. On a device with room for
    // all else but not for the widened layer, the option is ignored with a warning.
    bool widen_kv = false;
    // Option mma_attention=0|1: steps the tiled attention does not take run the split
    // kernel's blocks on tensor cores (kernels/attention_mma.cu: a static 93 SASS
    // instructions per KB of INT8 K+V at head dim 128 against 236, the query rounded to
    // halves) or on CUDA cores (0). On by default: on the H200 decode at depth 4096 was
    // 3-7% faster with it (Llama-3.2-1B tg64, F16 561 against 525 tok/s, INT8 558 against 542).
    bool mma_attention = true;
    // Option attention_merge=kernel|last_block: the split kernel's partials merged by a
    // second kernel (the default), or by the block of each row, KV head and query-head
    // chunk that finishes last (AttentionParams::merge_tickets): one launch a layer fewer,
    // for a fence and an atomic per block. Off until a GPU measures it.
    bool merge_in_split_kernel = false;
    // Option attention_prefetch=0|1: the split kernel on tensor cores has each warp ask L2
    // for its next tile's keys and values before it loads this tile's
    // (AttentionParams::prefetch_next_tile), so that a tile's K and V are no longer two DRAM
    // round trips a warp waits out in turn. Off: 0.88-1.01x the walk in turn in the H200's
    // kernel bench (e392d98).
    bool attention_prefetch = false;
    // Option attention_pipeline=0|1: the split kernel on tensor cores walks each warp's
    // tiles software-pipelined (AttentionParams::pipeline_tiles): a tile's value loads and
    // the next tile's key loads go out as soon as the tile's scores are taken: one round
    // trip a tile waited out instead of two. The same outputs.
    // Off until a GPU measures it (2026-11-28: run on the CPU emulation only).
    bool attention_pipeline = false;
    // Option rope_append=kernel|gemv: a decode step's per-head norms, RoPE and KV append
    // done by a launch of their own (rope_append_kernel), or by the Q/K/V GEMV's block that
    // stores each head's last rows (GemvLaunch::rope_append_tickets): one launch a layer
    // fewer, the same bits. Off until a GPU measures it.
    bool rope_append_in_gemv = false;
    // Option prepare=launch|gemv: a one-row GEMV's 8-bit x made by a prepare launch of its
    // own, or, where another GEMV writes that x (the residual stream after the output or
    // down projection, SwiGLU's product), by that GEMV's blocks that store each group of 32
    // (GemvLaunch::q8_out), with the next norm's weight but not its scale, which the
    // reading GEMV applies to its dots (Activation::norm_scale): three launches a layer
    // fewer, for a fence and an atomic per block; the bytes of prepare's rule up to
    // rounding. Off until a GPU measures it.
    bool prepare_in_gemv = false;
    // Option merge_q8=1: a one-row step's attention merge (the merge kernel, or the split
    // kernel's last blocks) also writes its output's 8-bit x, a group of 32 a warp of the
    // merge (AttentionParams::out_q), and the output projection's GEMV reads it instead of
    // a prepare launch's: one launch a layer fewer with no ticket (a merge block holds
    // whole groups: a head's 64 or 128 values), the same bytes. Off until a GPU measures it
    // (2026-11-28: run on the CPU emulation only).
    bool merge_q8 = false;
    // Option gemm=f16 (default) or gemm=f32: the GEMM's inputs. F16 (weights dequantized to
    // halves, x rounded to halves, F32 accumulation) runs on tensor cores; F32 is plain
    // SGEMM, the reference's products to float rounding. The suite's bounds hold for both.
    bool gemm_f16 = true;
    // Option weights=shared|device: weights written by the host in place into memory the
    // device reads (managed memory: on a Jetson, which shares its DRAM, no second copy even
    // while loading), or repacked on the host and copied to device memory. Default: shared
    // on an integrated GPU, device otherwise; shared on a discrete GPU is for testing that
    // path (its pages move to the GPU at load).
    bool weights_shared = false;
    // Option profile=1: every launch timed on the device, a table per plan at its end
    // (launch_profile.hpp); decode steps are then launched plainly, not replayed.
    bool profile = false;
    // Option profile_skip=ENTRY[+ENTRY...] (launch_profile.hpp's names): those launches are
    // not made, so a replayed step's time without them is what they cost in it, the figure
    // a fusion removing them could save at most (profile=1 times each launch alone, with
    // its launch cost). Every output is wrong then: for timing only, with a warning.
    KernelSet profile_skip = 0;
};

// One weight as the device holds it, in the forms its uses need.
struct DeviceWeight {
    std::string name;
    int32_t dtype = -1;
    int64_t rows = 0, cols = 0;
    uint64_t row_bytes = 0;     // GGUF layout
    DeviceSpan packed_bytes;  // MATMUL and EMBED: the GEMV layout (weight_layout.hpp)
    DeviceSpan table;         // EMBED of a type that layout cannot hold: the GGUF bytes
    PackedMatrix packed{};
    DeviceSpan floats;        // norms, biases, rope factors: F32
};

struct Model {
    Backend* backend = nullptr;
    // Every form of every weight in one allocation: allocated one by one, a 1B model's
    // forms took 107 MiB more than their 763 MiB on an H200 (the allocator's granularity).
    DeviceBuffer weight_memory;
    std::vector<DeviceWeight> weights;
    uint64_t bytes = 0;  // weight_memory's
};

struct Context {
    Model* model = nullptr;
    er_context_params params{};
    int32_t n_seqs = 1;
    DeviceBuffer kv;                      // every layer's K, V (and Q8 scales), all sequences
    std::vector<KvLayerAllSeqs> layers;   // views into kv
    std::vector<int32_t> filled;          // per sequence: positions [0, filled) hold keys and values
    std::vector<int32_t> next_pos;        // per sequence, while a step's rows are read
    uint64_t kv_bytes = 0;
    uint64_t scratch_bytes = 0;           // of the plans alive
};

// What a model and its contexts hold or will hold on the device, for refusals.
struct MemoryFigures {
    uint64_t model = 0;    // the weights
    uint64_t kv = 0;       // the KV cache at this context
    uint64_t scratch = 0;  // a plan's values and workspaces
};

// One line naming a need that does not fit the device's free memory and the figures it
// is made of (or "" when it fits).
std::string memory_shortfall(Device& device, const char* what, uint64_t need, const MemoryFigures& figures);

}  // namespace edgerun::cuda_orin
