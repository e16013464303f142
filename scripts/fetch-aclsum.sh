#!/usr/bin/env bash
# Fetch ACLSum, expert summaries of ACL papers that nobody on this project wrote, for the
# summarize quality bench (`cargo bench --bench summarize_aclsum`).
#
#   scripts/fetch-aclsum.sh [DIR]        (default: target/test-docs/aclsum)
#
# What lands in DIR: train.jsonl, val.jsonl and test.jsonl, one paper a line: its id and title,
# the sentences of its abstract, introduction and conclusion, and three expert summaries
# (challenge, approach, outcome). They come from the `aclsum` wheel on the Python package
# index, pinned, through `pip download` (nothing is installed); only the split files are kept.
#
# Idempotent: a complete DIR is kept. Nothing is written outside DIR but a temporary folder.
# Never commit DIR.
set -euo pipefail

DIR=${1:-target/test-docs/aclsum}
VERSION=0.1.2

log() { printf 'fetch-aclsum: %s\n' "$*" >&2; }

stamp="$DIR/.complete-$VERSION"
if [ -f "$stamp" ]; then
    log "already in $DIR"
    exit 0
fi
if command -v pip3 >/dev/null 2>&1; then
    pip=pip3
elif command -v pip >/dev/null 2>&1; then
    pip=pip
else
    log "needs pip (apt-get install python3-pip)"
    exit 1
fi
command -v unzip >/dev/null 2>&1 || {
    log "needs unzip (apt-get install unzip)"
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! TMPDIR="$tmp" "$pip" download --quiet --no-cache-dir --no-deps -d "$tmp" \
    "aclsum==$VERSION" >"$tmp/log" 2>&1; then
    log "cannot download aclsum $VERSION:"
    tail -n 3 "$tmp/log" >&2
    exit 1
fi
wheel=$(ls "$tmp"/aclsum-"$VERSION"-*.whl)
unzip -q -o "$wheel" 'aclsum/dataset/*.jsonl' -d "$tmp/unpacked"
mkdir -p "$DIR"
for split in train val test; do
    mv "$tmp/unpacked/aclsum/dataset/$split.jsonl" "$DIR/$split.jsonl"
done
touch "$stamp"
log "unpacked aclsum $VERSION into $DIR (train, val, test)"
