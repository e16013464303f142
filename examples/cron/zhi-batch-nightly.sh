#!/bin/sh
# Every night, send what is new or changed in a folder of documents through the provider's
# Batch API — half the price of a direct run, outside the per-minute limits — and commit what
# the previous nights' batches answered.
#
# crontab -e, then (01:30 every day, the log appended):
#
#   30 1 * * * /usr/local/bin/zhi-batch-nightly.sh >> "$HOME/zhi-batch.log" 2>&1
#
# One command does both halves. Each night it
#   1. collects: asks the provider how the batches it submitted are, downloads the answers of
#      those that ended, commits each document's output and record exactly as a direct run
#      would (the same checks, the same cache), and deletes the uploaded and result files
#      from the provider;
#   2. submits: every document still to do (new, changed, or whose request failed or expired
#      in its batch) is written as one request line of a new batch.
# A batch is answered within 24 hours, so a document submitted tonight is committed tomorrow
# night (a long document that is summarized in pieces takes two nights: the pieces, then the
# combining request). Documents already done cost nothing: they are cached.
#
# Exit codes (docs/exit-codes.md#exit-codes): 0 submitted and/or collected, 1 some documents failed
# (the rest are committed), 2 a usage or configuration error, 3 aborted (bad key or quota), 75 try
# again later: the output folder is in use by another run, or the Batch API could not be reached to
# submit. Nothing is lost on 75 or on a kill: tomorrow's run picks everything up.

set -u

# cron starts with an almost empty environment: say where zhi is and give it the key.
PATH="$HOME/.cargo/bin:/usr/local/bin:/usr/bin:/bin"
export PATH
# A file holding `ZHI_API_KEY=...` (chmod 600), or set the key in ~/.config/zhi/config.yaml.
if [ -f "$HOME/.config/zhi/env" ]; then
    set -a
    . "$HOME/.config/zhi/env"
    set +a
fi

DOCS="${ZHI_DOCS:-$HOME/Documents/inbox}"
OUT="${ZHI_OUTPUT_DIR:-$HOME/Documents/zhi-output}"
SKILL="${ZHI_SKILL:-summarize}"

echo "$(date -u +%FT%TZ) zhi run $SKILL $DOCS --submit batch"
zhi run "$SKILL" "$DOCS" -o "$OUT" --no-progress --submit batch
code=$?
case $code in
    0) ;;
    1) echo "some documents failed; details: zhi manifest show -o '$OUT'" ;;
    3) echo "aborted (API key or quota); details: zhi manifest show -o '$OUT'" ;;
    75) echo "busy, or the Batch API was out of reach; tomorrow's run picks it up" ;;
esac
zhi batch status -o "$OUT" || true
exit "$code"
