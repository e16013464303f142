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
# A 0.5B model on a CPU: one document at a time, deterministic sampling.
CONFIG=$(mktemp)
trap 'rm -f "$CONFIG"' EXIT
printf 'temperature: 0\n' > "$CONFIG"
status=0
"$ZHI" --config "$CONFIG" run summarize examples/docs --base-url "$URL" -j 1 || status=$?
echo
echo "== outputs"
find "$ZHI_OUTPUT_DIR/summarize" -type f | sort
for f in $(find "$ZHI_OUTPUT_DIR/summarize" -type f | sort | head -3); do
  echo "--- $f"; cat "$f"; echo
done
echo "== manifest"
"$ZHI" manifest show -o "$ZHI_OUTPUT_DIR" || true
echo "(stop the model with examples/local-llm/stop.sh)"
exit $status
