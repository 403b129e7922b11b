#!/usr/bin/env python3
"""The test suite's reference, checked before anything is compared with it: llama.cpp as
llama-cpp-python built it must be a portable build (no AMX: ggml's AMX path crashes at the
first evaluation in VMs, llama.cpp issue 20824) and must complete a short prompt on the
default model. A crash becomes a message naming the cause instead of a bare SIGSEGV in
every test that uses the reference.

    check_reference.py MODEL|@fetch:REPO_ROOT        exit 0 usable, 1 not
"""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetched_model import model_path  # noqa: E402

REBUILD = "rebuild it portably: scripts/install-deps.sh --test (scripts/llamacpp-wheel.sh portable)"

try:
    import llama_cpp
except ImportError as e:
    sys.exit(f"FAIL: the reference is missing ({e}): {REBUILD}")

info = llama_cpp.llama_print_system_info().decode()
print(f"llama-cpp-python {llama_cpp.__version__}: {info.strip()}")
features = {part.split("=")[0].strip() for part in info.split("|") if part.strip().endswith("= 1")}
amx = sorted(f for f in features if "AMX" in f)
if amx:
    sys.exit(f"FAIL: llama.cpp was built with {', '.join(amx)}: its AMX path crashes in VMs "
             f"(llama.cpp issue 20824) and such a build only runs on the CPU it was made on; {REBUILD}")

model = model_path(sys.argv[1])
# In a child: a crash must not take this checker with it.
child = subprocess.run([sys.executable, "-c", """
import sys, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False, seed=1)
out = llm.create_completion("The capital of France is", max_tokens=8, temperature=0)
text = out["choices"][0]["text"]
assert out["usage"]["completion_tokens"] > 0, out
print(repr(text))
""", model], capture_output=True, text=True, timeout=300)
if child.returncode < 0:
    name = signal.Signals(-child.returncode).name
    sys.exit(f"FAIL: llama.cpp died with {name} in an 8-token completion on {os.path.basename(model)}: "
             f"the reference build does not run on this CPU ({info.strip()}); {REBUILD}\n{child.stderr[-2000:]}")
if child.returncode != 0:
    sys.exit(f"FAIL: llama.cpp could not complete a short prompt (exit {child.returncode}):\n{child.stderr[-2000:]}")
print(f"OK: llama.cpp completes 'The capital of France is' with {child.stdout.strip()}")
