#!/usr/bin/env bash
# The quick start without an API key: install zhi (`cargo install --path . --locked`, into
# ~/.cargo/bin), start a small local model, summarize the sample documents in examples/docs,
# and show the outputs and the manifest.
#
#   examples/local-demo.sh            (from the repository root; LOCAL_LLM_PORT=8085)
#
# Needs Rust 1.89 or later, python3 with venv, and curl; about 2.5 GB of disk for the build
# (target/) and 600 MB for the model (~/.cache/zhi-local-llm), ~540 MB of it downloaded once.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cargo >/dev/null 2>&1 || missing+=("Rust 1.89 or later (https://rustup.rs)")
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=("python3 with venv (Debian/Ubuntu: apt-get install python3-venv)")
command -v curl >/dev/null 2>&1 || missing+=("curl")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'local-demo: missing: %s\n' "${missing[@]}" >&2
  exit 1
fi

echo "== installing zhi (cargo install --path . --locked)"
cargo install --path . --locked --quiet
BIN=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin
ZHI=$BIN/zhi
if [ "$(command -v zhi)" = "$ZHI" ]; then
  echo "zhi is $ZHI (on your PATH)"
else
  echo "zhi is $ZHI, which is not first on your PATH; add this to your shell's profile:"
  echo "  export PATH=\"$BIN:\$PATH\""
fi

URL=$(examples/local-llm/start.sh "${LOCAL_LLM_PORT:-8085}" | tail -n 1)
echo "local model at $URL"
export ZHI_OUTPUT_DIR=${ZHI_OUTPUT_DIR:-zhi-output}
# Deterministic sampling. zhi asks the server its context window and slots (one slot: one
# request at a time) by itself.
CONFIG=$(mktemp)
trap 'rm -f "$CONFIG"' EXIT
printf 'temperature: 0\n' >"$CONFIG"
status=0
echo "== zhi run summarize examples/docs --base-url $URL"
"$ZHI" --config "$CONFIG" run summarize examples/docs --base-url "$URL" || status=$?
echo
echo "== outputs"
find "$ZHI_OUTPUT_DIR/summarize" -type f | sort
find "$ZHI_OUTPUT_DIR/summarize" -type f -name '*.md' -print0 | sort -z |
  while IFS= read -r -d '' f; do
    echo "--- $f"
    cat "$f"
    echo
  done
echo "== zhi manifest show"
"$ZHI" manifest show -o "$ZHI_OUTPUT_DIR" || true
echo
echo "(the model keeps running for more tries: stop it with examples/local-llm/stop.sh)"
exit $status
