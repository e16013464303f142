#!/bin/sh
# Every night, summarize what is new or changed in a folder of documents.
#
# crontab -e, then (02:30 every day, the log appended):
#
#   30 2 * * * /usr/local/bin/zhi-nightly.sh >> "$HOME/zhi-nightly.log" 2>&1
#
# Incremental by design: each run plans every document, but a document whose content, skill,
# model and arguments are unchanged since its last success is `cached` and costs no request.
# So the nightly run pays only for new and edited documents, and a night that failed halfway
# is finished by the next one (failed and unfinished documents are retried, nothing else).
#
# Exit codes (docs/exit-codes.md#exit-codes): 0 all done, 1 some documents failed (the rest are
# committed), 2 a usage or configuration error, 3 aborted (bad key, quota, or the token budget
# below), 75 "try again later": the output folder is in use by another run (yesterday's still going)
# or the API's rate limits outlasted every retry. On 75 this script waits and tries again.
#
# Rate limits are per process: `--rpm`/`--tpm` limit this run only. If other zhi processes
# use the same API key at the same time (another cron entry, a CI job), they share the
# account's real limit: divide it between them.

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
TRIES=3          # runs on exit 75
WAIT_SECS=900    # between them

try=1
while :; do
    echo "$(date -u +%FT%TZ) zhi run $SKILL $DOCS (try $try)"
    zhi run "$SKILL" "$DOCS" -o "$OUT" --no-progress --rpm 30 --budget-tokens 2000000
    code=$?
    [ "$code" -eq 75 ] || break
    if [ "$try" -ge "$TRIES" ]; then
        echo "still busy or rate limited after $TRIES tries; tomorrow's run will pick it up"
        break
    fi
    try=$((try + 1))
    sleep "$WAIT_SECS"
done

case $code in
    0) ;;
    1) echo "some documents failed; details: zhi manifest show -o '$OUT'" ;;
    3) echo "aborted (API key, quota or token budget); details: zhi manifest show -o '$OUT'" ;;
esac
exit "$code"
