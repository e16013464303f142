#!/usr/bin/env bash
# The quick start without an API key: build zhi, start a small local model, summarize the
# sample documents in examples/docs, and show the outputs and the manifest.
#
#   examples/local-demo.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
ZHI=target/release/zhi
URL=$(examples/local-llm/start.sh 8085 | tail -n 1)
echo "local model at $URL"
export ZHI_OUTPUT_DIR=${ZHI_OUTPUT_DIR:-zhi-output}
# Deterministic sampling. zhi asks the server its context window and slots (one slot: one
# document at a time) by itself.
CONFIG=$(mktemp)
trap 'rm -f "$CONFIG"' EXIT
printf 'temperature: 0\n' > "$CONFIG"
status=0
"$ZHI" --config "$CONFIG" run summarize examples/docs --base-url "$URL" || status=$?
echo
echo "== outputs"
find "$ZHI_OUTPUT_DIR/summarize" -type f | sort
find "$ZHI_OUTPUT_DIR/summarize" -type f -name '*.md' -print0 | sort -z |
  while IFS= read -r -d '' f; do
    echo "--- $f"; cat "$f"; echo
  done
echo "== manifest"
"$ZHI" manifest show -o "$ZHI_OUTPUT_DIR" || true
echo "(stop the model with examples/local-llm/stop.sh)"
exit $status
