#!/usr/bin/env python3
"""Compiles CUDA C++ device code to PTX with a given NVRTC library (ctypes, no other
dependency). Used by scripts/cuda12-check.sh to compile the kernel sources with CUDA
12.6's front end, which PyPI ships as libnvrtc (nvidia-cuda-nvrtc-cu12) while its
nvcc wheel has no nvcc.

    nvrtc_compile.py LIBNVRTC OUT.ptx SOURCE.cu [nvrtc options...]
"""
import ctypes
import sys
from pathlib import Path


def main():
    lib_path, out, source, *options = sys.argv[1:]
    nvrtc = ctypes.CDLL(lib_path)
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))

    prog = ctypes.c_void_p()
    text = Path(source).read_bytes()
    err = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), text, source.encode(), 0, None, None)
    if err:
        sys.exit(f"nvrtcCreateProgram: {nvrtc.nvrtcGetErrorString(err).decode()}")
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    err = nvrtc.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if log.value.strip():
        print(log.value.decode(errors="replace"), file=sys.stderr)
    if err:
        sys.exit(f"NVRTC {major.value}.{minor.value} failed on {source}: {nvrtc.nvrtcGetErrorString(err).decode()}")
    nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetPTX(prog, ptx)
    Path(out).write_bytes(ptx.value)
    print(f"NVRTC {major.value}.{minor.value}: {source} -> {out}")


if __name__ == "__main__":
    main()
