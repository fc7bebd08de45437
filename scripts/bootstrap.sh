# Sourced by the other scripts: a virtual environment with zkconsumer installed, from nothing.
# Re-installs only when pyproject.toml changes. Needs python3 (3.10+) on PATH.
set -euo pipefail
ZKC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZKC_VENV=${ZKCONSUMER_VENV:-$ZKC_ROOT/.venv}
export ZKCONSUMER_CACHE_DIR=${ZKCONSUMER_CACHE_DIR:-$ZKC_ROOT/.cache}

zkc_python=${PYTHON:-python3}
if ! "$zkc_python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "error: zkconsumer needs Python 3.10+ as '$zkc_python' (set PYTHON=/path/to/python3.x)" >&2
  exit 1
fi

zkc_install() {
  local extras=${1:-} stamp target
  stamp="$ZKC_VENV/.zkconsumer-installed${extras:+-$extras}"
  target="$ZKC_ROOT${extras:+[$extras]}"
  if [ ! -x "$ZKC_VENV/bin/python" ]; then
    "$zkc_python" -m venv "$ZKC_VENV"
  fi
  if [ ! -f "$stamp" ] || [ "$ZKC_ROOT/pyproject.toml" -nt "$stamp" ]; then
    echo "installing $target into $ZKC_VENV ..." >&2
    "$ZKC_VENV/bin/python" -m pip install --quiet --upgrade pip >&2
    "$ZKC_VENV/bin/python" -m pip install --quiet -e "$target" >&2
    touch "$stamp"
  fi
}

zkc_require_java() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then return 0; fi
  if command -v java >/dev/null 2>&1; then return 0; fi
  echo "error: Java 8+ is needed to run the local ZooKeeper and Kafka; install a JDK/JRE" \
       "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME" >&2
  exit 1
}
