#!/usr/bin/env bash
# Builds llama.cpp's own server (tools/server: the C++ `llama-server`) for tests/routes/test_llama_cpp_server.py,
# from the llama.cpp sources inside the llama-cpp-python sdist that the `llama` group pins (the same llama.cpp),
# fetched from PyPI and checked against the sha256 PyPI gives; prints the binary's path. Built once per machine
# (about 4 min on two cores), then reused from the cache folder.
set -euo pipefail
version=0.3.36
cache="${XDG_CACHE_HOME:-$HOME/.cache}/omnivchat-ci/llama-server-$version"
binary="$cache/build/bin/llama-server"
if [ ! -x "$binary" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # PyPI's simple index (PEP 691 JSON): the registry this machine reaches
  read -r url sha256 < <(python3 - "$version" <<'PY'
import json, sys, urllib.request
request = urllib.request.Request(
    "https://pypi.org/simple/llama-cpp-python/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
)
files = json.load(urllib.request.urlopen(request, timeout=60))["files"]
sdist = next(f for f in files if f["filename"] == f"llama_cpp_python-{sys.argv[1]}.tar.gz")
print(sdist["url"], sdist["hashes"]["sha256"])
PY
  )
  curl -sSfL --retry 3 "$url" -o "$work/src.tar.gz"
  echo "$sha256  $work/src.tar.gz" | sha256sum -c --quiet -
  tar xzf "$work/src.tar.gz" -C "$work"
  rm -rf "$cache/build"
  cmake -S "$work/llama_cpp_python-$version/vendor/llama.cpp" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  cmake --build "$cache/build" --target llama-server -j "$(nproc)" >&2
fi
echo "$binary"
