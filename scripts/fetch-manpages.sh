#!/usr/bin/env bash
# Render short manual pages, English and Simplified Chinese, with each page's own NAME line as
# the truth, for the extraction bench (`ZHI_BENCH_SETS=manpages cargo bench --bench ladder`).
# Nobody on this project wrote the pages or their truth: it is parsed from the pages.
#
#   scripts/fetch-manpages.sh [DIR]          (default: target/test-docs/manpages)
#
# What lands in DIR: en-001.txt … and zh-001.txt …, one page each as plain UTF-8 text (groff's
# rendering, 78 columns, no overstrike, no hyphenation), and truth.jsonl, one line a page:
#
#   {"file": "en-001.txt", "command": "ascii", "section": "7",
#    "summary": "ASCII character set encoded in octal, decimal, and hexadecimal",
#    "lang": "en", "page": "man7/ascii.7.gz"}
#
# command and summary are the two halves of the page's NAME line in its roff source
# (`.SH NAME`, `.SH "NAME"`, `.SH 名称`, `.SH NAME(名称)`, …: `ascii \- ASCII character set …`),
# font and escape sequences removed; section is the file name's (`ascii.7.gz` → `7`).
#
# Where they come from: Debian's packages manpages and manpages-dev (English: commands, files
# and overviews, and system calls and library functions; manpages alone has too few short
# pages) and manpages-zh (its zh_CN pages), taken with `apt-get download` and `dpkg-deb -x` into a temporary folder (never installed).
#
# Which pages: man(7) pages only (mdoc pages and `.so` redirects are skipped); a NAME that
# names one command (a NAME listing several, `a, b \- …`, is skipped, so the truth has one
# answer); a command of one word; a rendering of at most MAX_CHARS characters (default 3000)
# that shows the command and the summary (white space aside). Of those, sorted by section and
# name, EN (default 104) English and ZH (default 52) Chinese pages are taken round-robin over
# the sections, and truth.jsonl lists them two English then one Chinese, so that its first N
# lines mix both languages whatever N. The file names say nothing of the page.
# Needs python3 (its standard library only) and groff.
#
# Idempotent: a complete DIR for the same choice is kept. Nothing is written outside DIR but a
# temporary folder. Never commit DIR.
set -euo pipefail

DIR=${1:-target/test-docs/manpages}
EN=${EN:-104}
ZH=${ZH:-52}
MAX_CHARS=${MAX_CHARS:-3000}

log() { printf 'fetch-manpages: %s\n' "$*" >&2; }

for n in "$EN" "$ZH" "$MAX_CHARS"; do
    case "$n" in
    '' | *[!0-9]*)
        log "EN, ZH and MAX_CHARS must be numbers, not '$n'"
        exit 2
        ;;
    esac
done
stamp="$DIR/.complete-$EN-$ZH-$MAX_CHARS"
if [ -f "$stamp" ]; then
    log "already in $DIR"
    exit 0
fi
for tool in python3 groff apt-get dpkg-deb; do
    command -v "$tool" >/dev/null 2>&1 || {
        log "needs $tool"
        exit 1
    }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for package in manpages manpages-dev manpages-zh; do
    if ! (cd "$tmp" && apt-get download "$package") >"$tmp/log" 2>&1; then
        log "cannot download $package:"
        tail -n 3 "$tmp/log" >&2
        exit 1
    fi
done
for deb in "$tmp"/*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
done
log "took the pages from $(cd "$tmp" && echo *.deb)"

mkdir -p "$tmp/out"
python3 - "$tmp/root/usr/share/man" "$tmp/out" "$EN" "$ZH" "$MAX_CHARS" <<'PY'
import gzip, json, os, re, subprocess, sys

man, out, want_en, want_zh, max_chars = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])

NAME_HEADING = re.compile(r'^\.SH\s+"?\s*(NAME|名称|名字)', re.I)
FONT_REQUESTS = {".B", ".I", ".BR", ".BI", ".IB", ".IR", ".RB", ".RI", ".SM", ".SB"}
ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),   # font changes
    (re.compile(r"\\s[+-]?\d"), ""),               # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),  # strings
    (re.compile(r"\\\(em|\\\[em\]"), "—"),
    (re.compile(r"\\\(en|\\\[en\]"), "–"),
    (re.compile(r"\\\(aq|\\\[aq\]"), "'"),
    (re.compile(r"\\\(lq|\\\(rq|\\\(dq"), '"'),
    (re.compile(r"\\[-–]"), "-"),
    (re.compile(r"\\[&%c:|^)]"), ""),
    (re.compile(r"\\[ ~0]"), " "),
    (re.compile(r"\\e"), "\\\\"),
]


def unescape(s):
    for pattern, by in ESCAPES:
        s = pattern.sub(by, s)
    return re.sub(r"\s+", " ", s).strip()


def source(path):
    raw = gzip.open(path).read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def name_line(roff):
    """The NAME section's text, its requests' words kept, its comments dropped."""
    lines, inside = [], False
    for line in roff.splitlines():
        if NAME_HEADING.match(line):
            inside = True
            continue
        if not inside:
            continue
        if re.match(r"^\.(SH|SS|Sh)\b", line):
            break
        if line.startswith(('.\\"', "'\\\"", '\\"')):
            continue
        if line.startswith((".", "'")):
            request, _, args = line.partition(" ")
            if request in FONT_REQUESTS:
                lines.append(" ".join(a.strip('"') for a in re.findall(r'"[^"]*"|\S+', args)))
            continue
        lines.append(line)
    return " ".join(lines)


def parse(roff):
    """(command, summary) of the page's NAME, or None when it names several or can't be read."""
    text = name_line(roff)
    m = re.search(r"\s\\?-\s", text)
    if not m:
        return None
    command, summary = unescape(text[: m.start()]), unescape(text[m.end():])
    if not command or not summary or "," in command or " " in command:
        return None
    return command, summary


def render(path):
    roff = gzip.open(path).read()
    done = subprocess.run(
        ["groff", "-k", "-man", "-Tutf8", "-rHY=0", "-P", "-c", "-P", "-b", "-P", "-u"],
        input=roff, capture_output=True)
    if done.returncode != 0:
        return None
    text = done.stdout.decode("utf-8", "replace")
    text = "\n".join(l.rstrip() for l in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def squeeze(s):
    return re.sub(r"\s+", "", s)


def candidates(root):
    """{section: [page, …]} of the pages under root that qualify, sorted by name."""
    found = {}
    for sub in sorted(os.listdir(root)):
        if not re.fullmatch(r"man\d", sub):
            continue
        for name in sorted(os.listdir(os.path.join(root, sub))):
            m = re.fullmatch(r"(.+)\.(\d\w*)\.gz", name)
            path = os.path.join(root, sub, name)
            if not m or not os.path.isfile(path) or os.path.islink(path):
                continue
            roff = source(path)
            if roff is None:
                continue
            body = [l for l in roff.splitlines() if l.strip() and not l.startswith(('.\\"', "'\\\""))]
            if not body or body[0].startswith(".so "):
                continue
            parsed = parse(roff)
            if parsed is None:
                continue
            text = render(path)
            if text is None or len(text) > max_chars:
                continue
            command, summary = parsed
            flat = squeeze(text)
            if squeeze(command) not in flat or squeeze(summary) not in flat:
                continue
            found.setdefault(sub, []).append({
                "command": command, "section": m.group(2), "summary": summary,
                "page": os.path.relpath(path, root), "text": text})
    return found


def round_robin(by_section, want):
    chosen, rank = [], 0
    while len(chosen) < want and any(rank < len(p) for p in by_section.values()):
        chosen.extend(p[rank] for _, p in sorted(by_section.items()) if rank < len(p))
        rank += 1
    return chosen[:want]


en = round_robin(candidates(man), want_en)
zh = round_robin(candidates(os.path.join(man, "zh_CN")), want_zh)
if len(en) < want_en or len(zh) < want_zh:
    sys.exit(f"only {len(en)} English and {len(zh)} Chinese pages qualify, {want_en} and {want_zh} asked")
for lang, pages in (("en", en), ("zh", zh)):
    for i, p in enumerate(pages, 1):
        p["file"], p["lang"] = f"{lang}-{i:03}.txt", lang
        with open(os.path.join(out, p["file"]), "w", encoding="utf-8") as f:
            f.write(p["text"])
order = []
while en or zh:
    order += en[:2] + zh[:1]
    en, zh = en[2:], zh[1:]
with open(os.path.join(out, "truth.jsonl"), "w", encoding="utf-8") as f:
    for p in order:
        row = {k: p[k] for k in ("file", "command", "section", "summary", "lang", "page")}
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
PY

mkdir -p "$DIR"
rm -f "$DIR"/.complete-* "$DIR"/en-*.txt "$DIR"/zh-*.txt "$DIR"/truth.jsonl
mv "$tmp"/out/* "$DIR"/
touch "$stamp"
log "rendered $EN English and $ZH Chinese pages into $DIR (truth.jsonl names them)"
