#!/usr/bin/env bash
# Installs every dependency from Debian 12 packages and builds tova in Release into build/: the
# tova program (build/bin/tova) and the Python module (PYTHONPATH=build/python, Debian's python3).
# Usage: scripts/setup.sh            (idempotent; re-running only rebuilds what changed)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config libhwy-dev nlohmann-json3-dev
          libcli11-dev libfmt-dev libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev
          gnuplot-nox clang libclang-rt-14-dev  # clang: the sanitizer pass and libFuzzer (scripts/fuzz.sh)
          chromium nginx curl  # the server's web page in a browser, replicas behind nginx, README examples
          python3-dev pybind11-dev python3-pytest python3-numpy  # import tova (python/) and its tests
          python3-jsonschema  # validating constrained output (python/tests/test_grammar.py, tests/server)
          python3-jinja2  # the reference renderer of chat templates (tests/jinja, scripts/jinja_reference.py)
          python3-regex  # the reference splitter of the gpt-4o pre-tokenizer (tests/tokenizer, scripts/pretokenize_reference.py)
          tmux)  # the terminal test of tova chat (line editing, Ctrl-C)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The server tests drive `tova serve` with the real openai npm client and its web page with
# playwright-core (Debian's chromium; no browser is downloaded), pinned by the lockfile.
if command -v npm >/dev/null 2>&1; then
  (cd tests/server/client && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >&2)
else
  echo "setup: npm not found: the server client tests will be skipped" >&2
fi

build_dir=${TOVA_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TOVA_CMAKE_ARGS:-} >&2
cmake --build "$build_dir" -j "$(nproc)" >&2
