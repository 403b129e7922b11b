"""What the CLI test scripts share: their arguments (EDGERUN MODEL WORKDIR), running the
binary, named checks that are counted, and the summary and exit status."""
import os
import subprocess
import sys

EDGERUN, MODEL, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(WORK, exist_ok=True)
failures = []


def run(*args, input=None, timeout=600, env=None):
    return subprocess.run([EDGERUN, *args], input=input, capture_output=True, text=True, timeout=timeout, env=env)


def check(name, condition, detail=""):
    print(f"{'ok  ' if condition else 'FAIL'} {name}" + (f": {detail}" if detail and not condition else ""))
    if not condition:
        failures.append(name)


def run_tests(*tests):
    for test in tests:
        test()
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)
