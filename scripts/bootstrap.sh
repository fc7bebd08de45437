# Sourced by the other scripts: a virtual environment with zkconsumer installed, from nothing.
# Re-installs only when pyproject.toml or a C extension's source changes. Needs python3
# (3.10+) on PATH.
set -euo pipefail
ZKC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZKC_VENV=${ZKCONSUMER_VENV:-$ZKC_ROOT/.venv}
# Downloads (the Kafka bundle, ...) go where the bare `zkconsumer` command puts them, wherever
# it is started from: $ZKCONSUMER_CACHE_DIR if set, else the user's cache folder (see
# zkconsumer.localcluster.bundle.default_cache_dir). Nothing is set here, so there is one cache.

zkc_python=${PYTHON:-python3}
if ! "$zkc_python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "error: zkconsumer needs Python 3.10+ as '$zkc_python' (set PYTHON=/path/to/python3.x)" >&2
  exit 1
fi

zkc_install() {
  local extras=${1:-} stamp target log
  stamp="$ZKC_VENV/.zkconsumer-installed${extras:+-$extras}"
  target="$ZKC_ROOT${extras:+[$extras]}"
  if [ ! -x "$ZKC_VENV/bin/python" ]; then
    "$zkc_python" -m venv "$ZKC_VENV"
  fi
  if [ ! -f "$stamp" ] || [ "$ZKC_ROOT/pyproject.toml" -nt "$stamp" ] \
      || [ "$ZKC_ROOT/zkconsumer/records/_columns.c" -nt "$stamp" ] \
      || [ "$ZKC_ROOT/zkconsumer/member/_cursor.c" -nt "$stamp" ]; then
    echo "installing $target into $ZKC_VENV ..." >&2
    # pip and setuptools talk (ext-modules warnings, editable-install banners) even when all is
    # well: kept in a log, shown only when the install fails.
    log="$ZKC_VENV/zkconsumer-install.log"
    if ! { "$ZKC_VENV/bin/python" -m pip install --quiet --upgrade pip \
           && "$ZKC_VENV/bin/python" -m pip install --quiet -e "$target"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "error: installing $target failed; pip's output is above and in $log" >&2
      exit 1
    fi
    touch "$stamp"
  fi
  # An editable install leaves the sources without bytecode, and where PYTHONDONTWRITEBYTECODE
  # is set every process compiles them again (a fifth of a worker's start): compiled here, as
  # pip compiles an installed package. Quick when nothing changed.
  "$ZKC_VENV/bin/python" -m compileall -q "$ZKC_ROOT/zkconsumer" >/dev/null 2>&1 || true
}

# zkc_require_java [MIN]: a java of major version MIN (default 8, what the local cluster needs)
# or newer, from $JAVA_HOME or PATH; otherwise one line naming what was found, and exit 1.
zkc_require_java() {
  local minimum=${1:-8} java version major
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    java=$JAVA_HOME/bin/java
  else
    java=$(command -v java || true)
  fi
  if [ -z "$java" ]; then
    echo "error: Java $minimum+ is needed to run the local ZooKeeper and Kafka; install a" \
         "JDK/JRE (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME" >&2
    exit 1
  fi
  # `java -version` prints e.g. 'openjdk version "17.0.9"' or, up to Java 8, 'java version "1.8.0_392"'.
  version=$("$java" -version 2>&1 | awk -F'"' '/version/ { print $2; exit }' || true)
  case $version in
    1.*) major=${version#1.}; major=${major%%.*} ;;
    *) major=${version%%[.+_-]*} ;;
  esac
  if ! [[ $major =~ ^[0-9]+$ ]]; then
    echo "error: could not tell the version of $java ('$java -version' says no version);" \
         "Java $minimum+ is needed" >&2
    exit 1
  fi
  if [ "$major" -lt "$minimum" ]; then
    echo "error: Java $minimum+ is needed, but $java is Java $major; install a JDK $minimum+" \
         "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME to one" >&2
    exit 1
  fi
}

# zkc_install_debian_package PACKAGE FILE TESTS: Debian's PACKAGE, where FILE is missing and
# apt-get can install it (as root); otherwise TESTS are skipped, and this says why.
zkc_install_debian_package() {
  local package=$1 file=$2 tests=$3
  [ -e "$file" ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "note: Debian's $package package is missing (apt-get install $package);" \
         "$tests will be skipped" >&2
    return 0
  fi
  echo "installing Debian's $package package ..." >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >/dev/null 2>&1; then
    apt-get update -q >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >/dev/null 2>&1 \
      || echo "note: could not install Debian's $package package; $tests will be skipped" >&2
  fi
}

# zkc_install_zookeeper_package: Debian's `zookeeper` package (3.8), whose servers the tests run
# as an ensemble.
zkc_install_zookeeper_package() {
  zkc_install_debian_package zookeeper /usr/share/java/zookeeper.jar \
    "the ZooKeeper ensemble tests"
}

# zkc_install_chromium_package: Debian's `chromium`, the browser the exporter page's test drives
# headless (through Playwright, never a browser of Playwright's own).
zkc_install_chromium_package() {
  zkc_install_debian_package chromium /usr/bin/chromium "the exporter page's browser test"
}
