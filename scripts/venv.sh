# Sourced by the scripts: the project's Python environment. Python packages (the test
# references, pip for the model download) live in a virtual environment of the project's
# own, never in the system's or the user's Python (Debian's refuses pip anyway: PEP 668).
#   EDGERUN_VENV   where it is (default: .venv in the repository)
#   PYTHON         the interpreter it is created from (default: python3)

edgerun_root=${edgerun_root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
EDGERUN_VENV=${EDGERUN_VENV:-$edgerun_root/.venv}

# Prints the environment's interpreter, creating the environment when it is missing.
project_python() {
  if [ ! -x "$EDGERUN_VENV/bin/python" ]; then
    local base=${PYTHON:-python3}
    echo "venv: creating $EDGERUN_VENV from $($base -c 'import sys; print(sys.executable)')" >&2
    rm -rf "$EDGERUN_VENV"
    if ! "$base" -m venv "$EDGERUN_VENV" >&2; then
      rm -rf "$EDGERUN_VENV"
      echo "venv: '$base -m venv' failed: install Debian's python3-venv (scripts/install-deps.sh does)" >&2
      return 1
    fi
  fi
  echo "$EDGERUN_VENV/bin/python"
}
