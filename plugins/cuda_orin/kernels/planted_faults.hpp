// Faults planted in cuda_orin's own code, so CI can show that the emulated conformance
// run catches a real bug in this backend (not only the suite's own planted faults, which
// live in its simple test backend). Each is a mistake of the kind a kernel author makes,
// and each shows only in some shapes:
//   - GemvRowTail: the GEMV grid covers only whole blocks of output rows, so the rows of
//     a last, partial block are never written (shows when a matrix's row count is above
//     one block's and not a multiple of it);
//   - SplitMerge: the flash-decode merge adds the splits' partial sums without rescaling
//     them to the common maximum (shows only when a step has several non-empty KV
//     splits whose maxima differ);
//   - KvScaleStride: the INT8 KV append stores a scale at token + group instead of
//     token * groups + group (shows only when a head has several 32-value groups).
// Only the emulated test plugin (cuda_orin_emu, compiled with EDGERUN_PLANTED_FAULTS)
// has the switch, set by its environment variable EDGERUN_CUDA_ORIN_FAULT; in the CUDA
// plugin every check below is the constant false and compiles away.
#pragma once

#include <edgerun/quant/blocks.hpp>

namespace edgerun::cuda_orin {

enum class PlantedFault { None, GemvRowTail, SplitMerge, KvScaleStride };

#if defined(EDGERUN_PLANTED_FAULTS)
extern PlantedFault g_planted_fault;  // defined by the emulated device
inline bool planted(PlantedFault f) { return g_planted_fault == f; }
#else
ER_HD constexpr bool planted(PlantedFault) { return false; }
#endif

}  // namespace edgerun::cuda_orin
