#!/usr/bin/env bash
# Debian's machine-readable copyright files, with each file's own header as the truth, for the
# extraction bench (`ZHI_BENCH_SETS=copyright cargo bench --bench ladder`): documents a cheap
# model mostly reads right, which is what a real folder is. Nobody on this project wrote the
# files or their truth: the truth is parsed from the files.
#
#   scripts/fetch-copyright.sh [DIR]          (default: target/test-docs/copyright)
#
# What lands in DIR: cr-001.txt …, one file each, byte for byte the package's
# /usr/share/doc/PACKAGE/copyright, and truth.jsonl, one line a file:
#
#   {"file": "cr-001.txt", "upstream_name": "libfoo", "license": "GPL-2+",
#    "source": "https://example.org/libfoo", "package": "libfoo1"}
#
# upstream_name and source are the header's `Upstream-Name` and `Source` fields, license the
# first line of the `License` field of the `Files: *` paragraph (the licence of the package's
# files as a whole).
#
# Which files: the copyright format 1.0 (`Format: …copyright-format/1.0/`); an Upstream-Name of
# one line; a Source of one URL (http or https) and nothing else; exactly one `Files: *`
# paragraph, whose License names one licence (no `or`, `and`, comma); at most MAX_CHARS
# characters (default 4000) of UTF-8. Candidates are the binary packages of at most 30 KB in
# the apt lists, sorted by name, every STEP-th (default 37) taken, one per upstream name; the
# first N (default 150) that qualify are kept, in name order. The file names say nothing of
# the package.
# Needs python3 (its standard library only), apt-cache, apt-get (with its package lists) and
# dpkg-deb.
#
# Idempotent: a complete DIR for the same choice is kept. Nothing is written outside DIR but a
# temporary folder. Never commit DIR.
set -euo pipefail

DIR=${1:-target/test-docs/copyright}
N=${N:-150}
STEP=${STEP:-37}
MAX_CHARS=${MAX_CHARS:-4000}

log() { printf 'fetch-copyright: %s\n' "$*" >&2; }

for n in "$N" "$STEP" "$MAX_CHARS"; do
    case "$n" in
    '' | *[!0-9]* | 0)
        log "N, STEP and MAX_CHARS must be positive numbers, not '$n'"
        exit 2
        ;;
    esac
done
stamp="$DIR/.complete-$N-$STEP-$MAX_CHARS"
if [ -f "$stamp" ]; then
    log "already in $DIR"
    exit 0
fi
for tool in python3 apt-cache apt-get dpkg-deb; do
    command -v "$tool" >/dev/null 2>&1 || {
        log "needs $tool"
        exit 1
    }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The candidates: small packages, every STEP-th by name.
apt-cache dumpavail | awk -v step="$STEP" '
    /^Package:/ { p = $2 }
    /^Size:/ { if ($2 <= 30000) print p }
' | sort -u | awk -v step="$STEP" 'NR % step == 1' >"$tmp/candidates"
log "$(wc -l <"$tmp/candidates") candidate packages"

mkdir -p "$tmp/debs" "$tmp/docs"
# apt-get download stops at the first package it cannot find: download in small batches and
# one by one where a batch fails.
xargs -n 40 <"$tmp/candidates" sh -c '
    cd "$0" && apt-get download "$@" >/dev/null 2>&1 || for p in "$@"; do
        apt-get download "$p" >/dev/null 2>&1 || true
    done' "$tmp/debs"
for deb in "$tmp"/debs/*.deb; do
    package=$(dpkg-deb -f "$deb" Package)
    dpkg-deb --fsys-tarfile "$deb" |
        tar -x -O "./usr/share/doc/$package/copyright" >"$tmp/docs/$package" 2>/dev/null ||
        rm -f "$tmp/docs/$package"
done
log "$(find "$tmp/docs" -type f | wc -l) copyright files read"

mkdir -p "$tmp/out"
python3 - "$tmp/docs" "$tmp/out" "$N" "$MAX_CHARS" <<'PY'
import json, os, re, sys

docs, out, want, max_chars = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def paragraphs(text):
    """The file's paragraphs, each a dict of field -> value (continuation lines joined by \n)."""
    result = []
    for block in re.split(r"\n[ \t]*\n", text):
        fields, last = {}, None
        for line in block.splitlines():
            if line.startswith("#"):
                continue
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line.strip()
                continue
            m = re.match(r"([A-Za-z][A-Za-z0-9-]*):(.*)$", line)
            if not m:
                last = None
                continue
            last = m.group(1).lower()
            fields[last] = m.group(2).strip()
        if fields:
            result.append(fields)
    return result


def truth(text):
    ps = paragraphs(text)
    if not ps or "copyright-format/1.0" not in ps[0].get("format", ""):
        return None
    head = ps[0]
    name = head.get("upstream-name", "")
    source = head.get("source", "")
    if not name or "\n" in name or "\n" in source:
        return None
    if not re.fullmatch(r"https?://\S+", source):
        return None
    star = [p for p in ps[1:] if p.get("files", "").split() == ["*"]]
    if len(star) != 1:
        return None
    licence = star[0].get("license", "").split("\n")[0].strip()
    if not licence or re.search(r"\s(or|and)\s|,", licence, re.I) or " " in licence:
        return None
    return {"upstream_name": name, "license": licence, "source": source}


rows, names = [], set()
for package in sorted(os.listdir(docs)):
    raw = open(os.path.join(docs, package), "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        continue
    if len(text) > max_chars:
        continue
    t = truth(text)
    if not t or t["upstream_name"].lower() in names:
        continue
    names.add(t["upstream_name"].lower())
    rows.append((package, text, t))
    if len(rows) == want:
        break
if len(rows) < want:
    sys.exit(f"fetch-copyright: only {len(rows)} files qualify, {want} wanted (try a smaller STEP)")
with open(os.path.join(out, "truth.jsonl"), "w", encoding="utf-8") as f:
    for i, (package, text, t) in enumerate(rows, 1):
        name = f"cr-{i:03}.txt"
        with open(os.path.join(out, name), "w", encoding="utf-8") as d:
            d.write(text)
        f.write(json.dumps({"file": name, **t, "package": package}, ensure_ascii=False) + "\n")
PY

mkdir -p "$DIR"
rm -f "$DIR"/cr-*.txt "$DIR"/.complete-*
cp "$tmp"/out/* "$DIR"/
touch "$stamp"
log "$N files and truth.jsonl in $DIR"
