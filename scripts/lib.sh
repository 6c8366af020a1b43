# Shared by scripts/start and scripts/test (sourced, not run). Run from the repository root.
# TIERLAB_VENV names the virtual environment (default .venv).

VENV="${TIERLAB_VENV:-.venv}"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

find_python() {
  local candidate
  for candidate in ${PYTHON:-} python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  echo "error: tierlab needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

# Create the venv if missing; (re)install the project when its build inputs changed.
ensure_python_env() {
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    "$(find_python)" -m venv "$VENV"
  fi
  local stamp="$VENV/.tierlab-installed"
  if [ ! -f "$stamp" ] || [ -n "$(find pyproject.toml setup.py simulation \
        \( -name pyproject.toml -o -name setup.py -o -name '*.c' -o -name '*.h' \) \
        -newer "$stamp" 2>/dev/null | head -n 1)" ]; then
    say "installing tierlab into $VENV (pip install -e '.[dev]')"
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -e '.[dev]'
    touch "$stamp"
  fi
}

# npm ci when the lock file changed; build when a source is newer than the manifest.
ensure_frontend() {
  command -v npm >/dev/null 2>&1 || { echo "error: tierlab needs Node 20+ and npm" >&2; return 1; }
  (
    cd frontend
    if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      say "installing front-end packages (npm ci)"
      npm ci --no-audit --no-fund
    fi
    local manifest=dist/.vite/manifest.json
    if [ ! -f "$manifest" ] || [ -n "$(find src index.html package.json package-lock.json \
          tsconfig.json vite.config.ts -newer "$manifest" 2>/dev/null | head -n 1)" ]; then
      say "building the front end (npm run build)"
      npm run build
    fi
  )
}
