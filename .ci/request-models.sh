#!/usr/bin/env bash
# The request code of the servers and SDK omnivchat sends to, each in a venv of its own (pinned, with --no-deps: the
# packages that importing its request model needs, nothing of a GPU): vLLM 0.34.0 (with the CPU torch its config
# module imports), SGLang 0.5.23 and the openai SDK, for tests/routes/test_request_models.py. Prints the lines that
# export each venv's python (OMNIVCHAT_VLLM_PYTHON, ...). Made once per machine, then reused from the cache folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/omnivchat-ci/request-models"
for server in vllm sglang openai; do
  venv="$cache/$server"
  pinned="$here/request-models/$server.txt"
  stamp="$venv/.pinned"
  if [ ! -f "$stamp" ] || ! cmp -s "$pinned" "$stamp"; then
    rm -rf "$venv"
    uv venv --quiet --python 3.11 "$venv" >&2
    uv pip install --quiet --python "$venv/bin/python" --no-deps -r "$pinned" >&2
    if [ "$server" = vllm ]; then  # a CPU torch: the wheel on this machine's disk, else PyTorch's CPU index
      wheel="$(compgen -G "/opt/wheels/torch-2.13.0+cpu-cp311-*.whl" | head -n 1 || true)"
      if [ -n "$wheel" ]; then
        uv pip install --quiet --python "$venv/bin/python" --no-deps "$wheel" >&2
      else
        uv pip install --quiet --python "$venv/bin/python" --no-deps --index-url https://download.pytorch.org/whl/cpu \
          "torch==2.13.0+cpu" >&2
      fi
    fi
    cp "$pinned" "$stamp"
  fi
  echo "export OMNIVCHAT_$(echo "$server" | tr '[:lower:]' '[:upper:]')_PYTHON=$venv/bin/python"
done
