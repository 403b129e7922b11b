#!/usr/bin/env bash
# JetPack 6 compatibility check: compiles the cuda_orin kernel library with CUDA 12.6
# (JetPack 6's toolkit) for Orin, sm_87.
#
# PyPI's nvidia-cuda-nvcc-cu12 wheels hold ptxas and libnvvm but no nvcc driver and no
# C++ front end (checked: 12.1, 12.4, 12.6, 12.9), so the check is made of the parts
# CUDA 12.6 does ship on PyPI:
#   1. device code: each kernel source compiled by NVRTC 12.6 (nvidia-cuda-nvrtc-cu12:
#      the CUDA 12.6 C++ front end and NVVM) to compute_87 PTX, then assembled by
#      ptxas 12.6 (nvidia-cuda-nvcc-cu12) to sm_87 machine code;
#   2. host code: the library's runtime-API source (host_runtime.cpp and the headers it
#      includes) and the plugin's CUDA host code (cuda_device.cpp, context_memory.cpp,
#      cublas_gemm.cpp) compiled by the host compiler against CUDA 12.6's runtime headers
#      (nvidia-cuda-runtime-cu12) and cuBLAS 12.6's (nvidia-cublas-cu12). The kernel
#      launch statements (<<<>>>) in the .cu files are not covered: only nvcc parses them.
#
# cuBLAS's headers (0.6 MB) come only inside its 393 MB wheel, which holds the libraries
# too (574 MB installed): the wheel is downloaded (pip), its include/ directory kept and
# the rest dropped. Measured 2026-11-24 on the development machine: download 2.6-6.5 s,
# extraction under 0.1 s.
#
#   scripts/cuda12-check.sh [WORKDIR]      (default: build/cuda12)
# Exits 77 (a skip for ctest) when the packages cannot be installed (no network).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build/cuda12}
source scripts/venv.sh
python=$(project_python)
pkgs=$work/pkgs
mkdir -p "$work"

wheels=("nvidia-cuda-nvcc-cu12==12.6.85" "nvidia-cuda-runtime-cu12==12.6.77" "nvidia-cuda-nvrtc-cu12==12.6.85"
        "nvidia-cuda-cccl-cu12==12.6.77")
if [ ! -f "$pkgs/.installed-12.6-cccl" ]; then
  rm -rf "$pkgs"  # pip --target does not add to an nvidia/ folder an older list made
  echo "cuda12-check: pip install ${wheels[*]}"
  if ! $python -m pip install --quiet --disable-pip-version-check --no-deps --target "$pkgs" "${wheels[@]}"; then
    echo "skipped: cannot install the CUDA 12.6 packages from PyPI"
    exit 77
  fi
  touch "$pkgs/.installed-12.6-cccl"
fi
cublas_wheel="nvidia-cublas-cu12==12.6.4.1"
if [ ! -f "$pkgs/.cublas-headers-12.6.4.1" ]; then
  echo "cuda12-check: pip download $cublas_wheel (its headers kept)"
  rm -rf "$work/cublas-wheel"
  if ! $python -m pip download --quiet --disable-pip-version-check --no-deps -d "$work/cublas-wheel" "$cublas_wheel"; then
    echo "skipped: cannot download the cuBLAS 12.6 package from PyPI"
    exit 77
  fi
  $python - "$work"/cublas-wheel/*.whl "$pkgs" <<'PY'
import sys, zipfile
wheel, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    headers = [n for n in z.namelist() if n.startswith("nvidia/cublas/include/") and n.endswith(".h")]
    if not any(n.endswith("/cublas_v2.h") for n in headers):
        sys.exit(f"{wheel}: no nvidia/cublas/include/cublas_v2.h")
    z.extractall(target, headers)
PY
  rm -rf "$work/cublas-wheel"
  touch "$pkgs/.cublas-headers-12.6.4.1"
fi
cublas_include=$pkgs/nvidia/cublas/include
ptxas=$pkgs/nvidia/cuda_nvcc/bin/ptxas
nvrtc=$(ls "$pkgs"/nvidia/cuda_nvrtc/lib/libnvrtc.so.12* | head -n 1)
cuda_include=$pkgs/nvidia/cuda_runtime/include
# The runtime headers include crt/host_defines.h (nvcc's) and nv/target (CCCL's): named
# here, or the host compiler takes whatever CUDA /usr/local/include links to (13.0 here).
nvcc_include=$pkgs/nvidia/cuda_nvcc/include
cccl_include=$pkgs/nvidia/cuda_cccl/include
chmod +x "$ptxas"
"$ptxas" --version | tail -n 1

kernels=plugins/cuda_orin/kernels
failed=0
passed=0
for src in "$kernels"/*.cu; do
  name=$(basename "$src" .cu)
  # -default-device: NVRTC takes no host functions; the headers' host-only helpers are
  # compiled as device code instead (they are valid as such), the launchers drop out.
  if $python scripts/cuda12/nvrtc_compile.py "$nvrtc" "$work/$name.ptx" "$src" \
       --gpu-architecture=compute_87 -std=c++17 -default-device -diag-suppress=177 \
       -Icore/include -I"$kernels" -Iscripts/cuda12/shim -I"$cuda_include" &&
     "$ptxas" -arch=sm_87 -O3 "$work/$name.ptx" -o "$work/$name.sm_87.cubin"; then
    echo "PASS  $name.cu: NVRTC 12.6 -> compute_87 PTX -> ptxas 12.6 sm_87"
    passed=$((passed + 1))
  else
    echo "FAIL  $name.cu"
    failed=$((failed + 1))
  fi
done

cxx=${CXX:-c++}
read -ra cxxflags <<< "${CXXFLAGS:-}"  # e.g. a cross compiler's --sysroot (aarch64-check.sh)
# The host code: the kernel library's runtime-API source and the plugin's CUDA Device,
# its context measurement and its cuBLAS GEMM.
for src in "$kernels/host_runtime.cpp" plugins/cuda_orin/cuda_device.cpp plugins/cuda_orin/context_memory.cpp \
           plugins/cuda_orin/cublas_gemm.cpp; do
  # EDGERUN_CUDA_ARCHITECTURES: what CMake passes the plugin (the Orin build's here).
  if "$cxx" "${cxxflags[@]}" -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Icore/include -I"$kernels" -Iplugins/cuda_orin \
       -DEDGERUN_CUDA_ARCHITECTURES='"87"' -I"$cuda_include" -I"$nvcc_include" -I"$cccl_include" \
       -I"$cublas_include" "$src"; then
    echo "PASS  $(basename "$src") against the CUDA 12.6 runtime and cuBLAS 12.6 headers"
    passed=$((passed + 1))
  else
    echo "FAIL  $(basename "$src") against the CUDA 12.6 runtime and cuBLAS 12.6 headers"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
