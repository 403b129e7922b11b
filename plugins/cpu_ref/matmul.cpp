// Matrix products against stored (usually quantized) weights.
//
// Steps of up to kMaxDotRows rows (decode, a decode step of several sequences, short
// prompts): each weight row is multiplied with every row of x by RowKernels::dot_multi,
// which dequantizes it once for all of them (one row: dequantizes and multiplies in one
// pass) and gives each product the bits of a one-row step, so a row's result does not
// depend on the rows it shares a step with. Longer steps (prefill): a tile of
// kGemmTileRows weight rows is dequantized to F32 once and multiplied with every row of x
// by OpenBLAS sgemm, called single-threaded from our own pool. Tiles have a fixed size,
// so each output element comes from a call of the same shape whatever the thread count:
// the result is deterministic.
#include "ops.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>

// OpenBLAS (pthread builds) starts its own worker pool when the library loads. cpu_ref
// never uses it (BLAS runs single-threaded inside cpu_ref's pool), so after pinning the
// thread count to one it is shut down, which OpenBLAS itself does before a fork. Weak:
// other BLAS builds may not have it, then the idle pool simply stays.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace edgerun::cpu_ref {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The target and its first row for task `task` when target t has tasks [begin[t], begin[t+1]).
struct TaskMap {
    int64_t begin[ER_NODE_MAX_IO + 1] = {};
    int32_t n = 0;

    TaskMap(const MatmulOp& op, int64_t rows_per_task) : n(op.n_targets) {
        for (int32_t t = 0; t < n; ++t) begin[t + 1] = begin[t] + ceil_div(op.targets[t].weight->rows, rows_per_task);
    }
    int64_t total() const { return begin[n]; }
    int32_t target_of(int64_t task) const {
        int32_t t = 0;
        while (task >= begin[t + 1]) ++t;
        return t;
    }
};

void gemv(const MatmulOp& op, int32_t n_rows, ThreadPool& pool, const MatmulScratch& scratch) {
    // Each row is one dot product wherever it runs, so the task size may follow the
    // thread count: about 32 tasks per thread, at least kGemvRowsPerTask rows each.
    int64_t total_rows = 0;
    for (int32_t t = 0; t < op.n_targets; ++t) total_rows += op.targets[t].weight->rows;
    const int64_t rows_per_task = std::max(kGemvRowsPerTask, total_rows / (32 * int64_t{pool.size()}));
    const TaskMap map(op, rows_per_task);
    pool.run(map.total(), [&](int64_t task, int thread) {
        const int32_t t = map.target_of(task);
        const MatmulTarget& target = op.targets[t];
        const WeightRef& w = *target.weight;
        const int64_t r0 = (task - map.begin[t]) * rows_per_task;
        const int64_t r1 = std::min(r0 + rows_per_task, w.rows);
        const DotMultiFn dot_multi = w.kernels->dot_multi;
        float* decoded = scratch.rows ? scratch.rows + thread * scratch.row_floats_per_thread : nullptr;
        for (int64_t r = r0; r < r1; ++r) {
            dot_multi(w.row(r), op.x, op.width, n_rows, op.width, target.out + r, w.rows, decoded);
            if (target.bias)
                for (int32_t i = 0; i < n_rows; ++i) target.out[i * w.rows + r] += target.bias[r];
        }
    });
}

void gemm(const MatmulOp& op, int32_t n_rows, ThreadPool& pool, const MatmulScratch& scratch) {
    const TaskMap map(op, kGemmTileRows);
    pool.run(map.total(), [&](int64_t task, int thread) {
        const int32_t t = map.target_of(task);
        const MatmulTarget& target = op.targets[t];
        const WeightRef& w = *target.weight;
        const int64_t r0 = (task - map.begin[t]) * kGemmTileRows;
        const int64_t n_tile = std::min(kGemmTileRows, w.rows - r0);
        const float* tile;
        if (w.dtype == 0) {
            tile = reinterpret_cast<const float*>(w.row(r0));
        } else {
            float* buffer = scratch.tiles + thread * scratch.tile_floats_per_thread;
            for (int64_t r = 0; r < n_tile; ++r) w.kernels->dequant(w.row(r0 + r), buffer + r * w.cols, w.cols);
            tile = buffer;
        }
        float* out = target.out + r0;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_rows, static_cast<int>(n_tile),
                    static_cast<int>(op.width), 1.0f, op.x, static_cast<int>(op.width), tile,
                    static_cast<int>(w.cols), 0.0f, out, static_cast<int>(w.rows));
        if (target.bias)
            for (int32_t i = 0; i < n_rows; ++i)
                for (int64_t r = 0; r < n_tile; ++r) out[i * w.rows + r] += target.bias[r0 + r];
    });
}

}  // namespace

void run_matmul(const MatmulOp& op, int32_t n_rows, ThreadPool& pool, const MatmulScratch& scratch) {
    if (n_rows >= kGemmMinRows)
        gemm(op, n_rows, pool, scratch);
    else
        gemv(op, n_rows, pool, scratch);
}

void init_blas() {
    static std::once_flag once;
    std::call_once(once, [] {
        openblas_set_num_threads(1);
        if (blas_thread_shutdown_) blas_thread_shutdown_();
        // One tiny product, so OpenBLAS's lazily built state exists before any step.
        const float a[4] = {1, 2, 3, 4};
        float c[4];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2);
    });
}

}  // namespace edgerun::cpu_ref
