"""The model argument of the Python tests: a path, or @fetch:REPO_ROOT for the project's
real model, which scripts/fetch-model.sh provides. When that model cannot be downloaded
here (the script's exit 3) the test is skipped (exit 77, ctest's SKIP_RETURN_CODE), or the
model is None when it is optional; any other failure of the script (a checksum mismatch)
fails the test."""
import os
import subprocess
import sys


def model_path(arg, optional=False):
    if not arg.startswith("@fetch:"):
        return arg
    done = subprocess.run([os.path.join(arg[len("@fetch:"):], "scripts", "fetch-model.sh")],
                          capture_output=True, text=True)
    if done.returncode == 3:
        print(f"SKIP: the model could not be downloaded:\n{done.stderr}")
        if optional:
            return None
        sys.exit(77)
    if done.returncode != 0:
        sys.exit(f"scripts/fetch-model.sh failed ({done.returncode}):\n{done.stderr}")
    return done.stdout.strip()
