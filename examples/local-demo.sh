#!/usr/bin/env bash
# The quick start without an API key: install zhi (`cargo install --path . --locked`, into
# ~/.cargo/bin), start a small local model, point zhi at it (~/.config/zhi/config.yaml, when
# there is none yet), summarize the sample documents in examples/docs, and show the outputs,
# the manifest and what to try next.
#
#   examples/local-demo.sh            (from the repository root; LOCAL_LLM_PORT=8085)
#
# Needs Rust 1.89 or later, python3 with venv, and curl; about 1.2 GB of disk for the release
# build (target/), 600 MB for the model (~/.cache/zhi-local-llm), ~540 MB of it downloaded once.
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
if [ ! -x target/release/zhi ]; then
  echo "building zhi in release mode: the first build takes 10-25 minutes on 2 cores"
fi
cargo install --path . --locked
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

# Every later zhi command should find the local model with no flag, and answer as the demo
# did: the user's settings file says where the model is and asks for deterministic sampling
# (temperature 0), unless there is one already (then it is left alone, and the lines to add
# are printed). zhi asks the server its context window and slots (one slot: one request at a
# time) by itself.
USER_CONFIG=$HOME/.config/zhi/config.yaml
SETTINGS=("base_url: $URL" "temperature: 0")
if [ ! -e "$USER_CONFIG" ]; then
  mkdir -p "$(dirname "$USER_CONFIG")"
  {
    echo "# Written by examples/local-demo.sh: zhi uses the local model it started"
    echo "# (examples/local-llm/start.sh starts it again, stop.sh stops it), at temperature 0 as"
    echo "# the demo ran. For the Zhipu API instead, delete these lines and set ZHI_API_KEY."
    printf '%s\n' "${SETTINGS[@]}"
  } >"$USER_CONFIG"
  echo "wrote $USER_CONFIG (${SETTINGS[*]}): every zhi command now runs as the demo did"
else
  absent=()
  for line in "${SETTINGS[@]}"; do
    grep -qxF "$line" "$USER_CONFIG" || absent+=("$line")
  done
  if [ ${#absent[@]} -eq 0 ]; then
    echo "$USER_CONFIG already points zhi at the local model, at temperature 0"
  else
    echo "$USER_CONFIG exists and was left as it is; to run as the demo does, add to it:"
    printf '  %s\n' "${absent[@]}"
  fi
fi
export ZHI_OUTPUT_DIR=${ZHI_OUTPUT_DIR:-zhi-output}
# The demo itself runs with these settings, whatever the user's file holds.
CONFIG=$(mktemp)
trap 'rm -f "$CONFIG"' EXIT
printf '%s\n' "${SETTINGS[@]}" >"$CONFIG"
status=0
echo "== zhi run summarize examples/docs --base-url $URL"
"$ZHI" --config "$CONFIG" run summarize examples/docs --base-url "$URL" || status=$?

echo
echo "== outputs"
# A run where every job failed leaves no folder: the manifest below says why.
if [ -d "$ZHI_OUTPUT_DIR/summarize" ]; then
  find "$ZHI_OUTPUT_DIR/summarize" -type f | sort
  find "$ZHI_OUTPUT_DIR/summarize" -type f -name '*.md' -print0 | sort -z |
    while IFS= read -r -d '' f; do
      echo "--- $f"
      cat "$f"
      echo
    done
else
  echo "(none)"
fi
echo "== zhi manifest show"
"$ZHI" manifest show -o "$ZHI_OUTPUT_DIR" || true
echo
cat <<EOF
== next (the README's recipes)
  zhi run summarize ~/some-folder     your own documents, every file under the folder
  zhi report                          the latest run as one web page (prints a file:// link)
  zhi skills new brief                your own skill: .zhi/skills/brief.yaml, then zhi run brief …
(the model keeps running for more tries: stop it with examples/local-llm/stop.sh)
EOF
exit $status
