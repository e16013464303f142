"""llama.cpp's OpenAI-compatible server (the xllamacpp wheel) over one GGUF model.

    serve.py MODEL PORT TEMPLATE     (run by start.sh in its venv; stopped with SIGTERM)

Serves http://127.0.0.1:PORT/v1/chat/completions under the model names in LOCAL_LLM_ALIASES
(comma-separated; default "glm-4-flash,local").
One slot: one request at a time (two cores have no more to give); zhi reads the slot count and
sends no more than that at once. Env: LOCAL_LLM_CTX (context window, default 4096),
LOCAL_LLM_API_KEY (require a bearer key), LOCAL_LLM_API_PREFIX (serve under another path, such
as /api/paas/v4).
"""

import os
import signal
import sys

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
p.model_alias = set(os.environ.get("LOCAL_LLM_ALIASES", "glm-4-flash,local").split(","))
if os.environ.get("LOCAL_LLM_API_PREFIX"):
    p.api_prefix = os.environ["LOCAL_LLM_API_PREFIX"]
if os.environ.get("LOCAL_LLM_API_KEY"):
    p.api_keys = [os.environ["LOCAL_LLM_API_KEY"]]
s = xlc.Server(p)
print("listening", s.listening_address, flush=True)
signal.sigwait([signal.SIGINT, signal.SIGTERM])
