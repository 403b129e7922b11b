#!/usr/bin/env python3
"""llama.cpp's CPU speed on a GGUF model, for comparison with cpu_ref's bench driver.

Prefill: one batch of `--prompt` tokens; decode: `--gen` single-token steps after it.
Token ids are arbitrary (speed does not depend on them). Prints tok/s for both, and the
instruction sets the llama.cpp build uses. Measure speed with the "fast" build (this CPU's
best, AMX excluded), not the test suite's portable one, which would flatter edgerun:
    LLAMA_CPP_LIB_PATH=$(scripts/llamacpp-wheel.sh fast --lib) \
      .venv/bin/python plugins/cpu_ref/bench/llama_cpp_bench.py MODEL.gguf --threads 2
"""
import argparse
import time

import llama_cpp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("llama.cpp build:", llama_cpp.llama_print_system_info().decode().strip())

    llm = llama_cpp.Llama(model_path=args.model, n_threads=args.threads, n_threads_batch=args.threads,
                          n_ctx=args.prompt + args.gen + 16, n_batch=args.prompt, n_ubatch=args.prompt,
                          verbose=False)
    n_vocab = llm.n_vocab()
    prompt = [(i * 7919 + 13) % n_vocab for i in range(args.prompt)]
    best = {"prefill": 0.0, "decode": 0.0, "prefill_cpu": 0.0, "decode_cpu": 0.0}
    for _ in range(args.repeat):
        llm.reset()
        llm._ctx.memory_clear(True) if hasattr(llm._ctx, "memory_clear") else None
        t0, c0 = time.perf_counter(), time.process_time()
        llm.eval(prompt)
        t1, c1 = time.perf_counter(), time.process_time()
        token = 1
        for i in range(args.gen):
            llm.eval([token])
            token = (token * 31 + i) % n_vocab
        t2, c2 = time.perf_counter(), time.process_time()
        best["prefill"] = max(best["prefill"], args.prompt / (t1 - t0))
        best["decode"] = max(best["decode"], args.gen / (t2 - t1))
        best["prefill_cpu"] = max(best["prefill_cpu"], args.prompt / (c1 - c0))
        best["decode_cpu"] = max(best["decode_cpu"], args.gen / (c2 - c1))
    print(f"llama.cpp threads={args.threads} prefill {args.prompt} tok: {best['prefill']:.1f} tok/s, "
          f"decode {args.gen} tok: {best['decode']:.1f} tok/s (best of {args.repeat}; per CPU-second: "
          f"prefill {best['prefill_cpu']:.1f}, decode {best['decode_cpu']:.1f})")


if __name__ == "__main__":
    main()
