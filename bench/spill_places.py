#!/usr/bin/env python3
"""Where in its SASS each kernel of a cuda_orin kernel source touches local memory.

  bench/spill_places.py [--nvcc NVCC] [--cuobjdump CUOBJDUMP] [--arch sm_90 ...] [--hot N] [SOURCE.cu ...]

tests/cuda/check_kernel_resources.py allows a few spilled bytes in some kernels
(gemv_kernel, for one) on the word that they cost nothing in the hot loops. ptxas only
says how many bytes; this says where: for every local load or store (LDL, STL) of every
kernel, the smallest loop around it (the span of a backward branch), in instructions.
A spill in a short loop (a task loop, a staging loop) runs per iteration; one outside,
or in a loop spanning most of the kernel (the loop over a block's rows), runs once per
row. Exits 1 when a local access lies in a loop shorter than --hot instructions (600),
so an allowance can be checked before it is written down. Default source: gemv.cu.
cuobjdump: as for gemv_task_instructions.py.
"""

import os
import sys

from sass_reader import KERNELS, backward_branches, command_line, functions, span_size


def arguments(ap):
    ap.add_argument("--hot", type=int, default=600, help="loops shorter than this are hot (instructions)")
    ap.add_argument("sources", nargs="*", default=[os.path.join(KERNELS, "gemv.cu")])


def main(argv):
    nvcc, cuobjdump, archs, args = command_line(__doc__, argv, arguments)
    hot_accesses = 0
    for arch in archs:
        for source in args.sources:
            for name, body in functions(nvcc, cuobjdump, source, arch).items():
                local = [(at, op) for at, op, _ in body if op in ("LDL", "STL")]
                if not local:
                    continue
                loops = backward_branches(body)
                print(f"{arch} {name}: {len(local)} local accesses")
                for at, op in local:
                    around = [span_size(body, s) for s in loops if s[0] <= at <= s[1]]
                    innermost = min(around) if around else None
                    hot = innermost is not None and innermost < args.hot
                    hot_accesses += hot
                    where = "outside every loop" if innermost is None else f"in a loop of {innermost} instructions"
                    print(f"  {at:#07x} {op}: {where}{' (hot)' if hot else ''}")
    if hot_accesses:
        sys.exit(f"spill_places: {hot_accesses} local accesses in loops of under {args.hot} instructions")
    print(f"spill_places: no local access in a loop of under {args.hot} instructions")


if __name__ == "__main__":
    main(sys.argv[1:])
