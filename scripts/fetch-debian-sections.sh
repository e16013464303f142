#!/usr/bin/env bash
# Cut aligned English and Simplified Chinese sections out of the Debian Reference, a manual
# that nobody on this project wrote or translated, for the translation quality bench
# (`cargo bench --bench ladder`).
#
#   scripts/fetch-debian-sections.sh [DIR]      (default: target/test-docs/debian-sections)
#
# What lands in DIR: en-1.txt … en-N.txt and zh-1.txt … zh-N.txt, the same section of the manual
# in English and in its published Simplified Chinese translation, as plain text (headings and
# paragraphs, lists as "- " lines, command blocks kept verbatim, HTML tags stripped), and
# sections.tsv naming each one (number, chapter file, anchor, English words, title). N is
# ZHI_BENCH_SECTIONS (default 6).
#
# Where they come from: the HTML of the Debian packages debian-reference-en and
# debian-reference-zh-cn (chNN.{en,zh-cn}.html), read where they are installed, else taken from
# the packages with `apt-get download` and `dpkg-deb -x` into a temporary folder (never
# installed). A section is taken when it is a leaf section (no subsections), has 150–400 English
# words, a command block or a path, no table, the same anchor in both languages with as many
# blocks in each, and Chinese prose (not a paragraph left untranslated). Sections are taken
# round-robin over the chapters, in the manual's order, so the first N are the same whatever N.
# Needs python3 (its standard library only).
#
# Idempotent: a complete DIR for the same N is kept. Nothing is written outside DIR but a
# temporary folder. Never commit DIR.
set -euo pipefail

DIR=${1:-target/test-docs/debian-sections}
N=${ZHI_BENCH_SECTIONS:-6}

log() { printf 'fetch-debian-sections: %s\n' "$*" >&2; }

case "$N" in
'' | *[!0-9]* | 0)
    log "ZHI_BENCH_SECTIONS must be a positive number, not '$N'"
    exit 2
    ;;
esac
stamp="$DIR/.complete-$N"
if [ -f "$stamp" ]; then
    log "already in $DIR"
    exit 0
fi
command -v python3 >/dev/null 2>&1 || {
    log "needs python3"
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The folder holding chNN.en.html and chNN.zh-cn.html: the installed one, else the packages'.
html=""
for d in /usr/share/debian-reference /usr/share/doc/debian-reference-common/html; do
    if [ -s "$d/ch01.en.html" ] && [ -s "$d/ch01.zh-cn.html" ]; then
        html=$d
        break
    fi
done
if [ -z "$html" ]; then
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
        log "needs debian-reference-en and debian-reference-zh-cn installed, or apt-get and dpkg-deb"
        exit 1
    fi
    for package in debian-reference-en debian-reference-zh-cn; do
        if ! (cd "$tmp" && apt-get download "$package") >"$tmp/log" 2>&1; then
            log "cannot download $package:"
            tail -n 3 "$tmp/log" >&2
            exit 1
        fi
    done
    for deb in "$tmp"/*.deb; do
        dpkg-deb -x "$deb" "$tmp/root"
    done
    html="$tmp/root/usr/share/debian-reference"
    log "took the HTML from the packages: $(cd "$tmp" && echo *.deb)"
fi

mkdir -p "$tmp/out"
python3 - "$html" "$tmp/out" "$N" <<'PY'
import glob, os, re, sys
from html.parser import HTMLParser

src, out, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
BLOCKS = {"p", "pre", "li", "dt", "dd", "th", "h1", "h2", "h3", "h4", "h5", "title"}
VOID = {"img", "br", "hr", "meta", "link", "col", "input", "a"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()


class Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("root", [], None)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def raw(node):
    return "".join(c if isinstance(c, str) else raw(c) for c in node.children)


def inline(node):
    s = raw(node)
    # A line break beside a Chinese character is the source's wrapping, not a space.
    s = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s*\n\s*|\s*\n\s*(?=[\u3000-\u9fff\uff00-\uffef])", "", s)
    return re.sub(r"\s+", " ", s).strip()


def blocks(node):
    """The node's text as blocks, (verbatim, text): paragraphs, list items, command blocks."""
    if node.tag == "pre":
        return [(True, raw(node).strip("\n"))]
    if node.tag == "img":
        return []
    has_block = any(isinstance(c, Node) and (c.tag in BLOCKS or c.tag in ("div", "table", "ul", "ol", "dl"))
                    for c in node.children)
    if node.tag in BLOCKS and not has_block:
        text = inline(node)
        return [(False, ("- " if node.tag == "li" else "") + text)] if text else []
    out = []
    for c in node.children:
        if isinstance(c, Node) and "titlepage" not in c.classes():
            out.extend(blocks(c))
    if node.tag == "li" and out:
        out[0] = (out[0][0], "- " + out[0][1])
    return out


def sections(path):
    """{anchor: (title, blocks, has_table, has_code)} of the file's leaf sections."""
    tree = Tree()
    tree.feed(open(path, encoding="utf-8").read())
    found = {}
    for node in tree.root.walk():
        if node.tag != "div" or "section" not in node.classes():
            continue
        if any(n is not node and n.tag == "div" and "section" in n.classes() for n in node.walk()):
            continue
        heading = next((n for n in node.walk() if n.tag in ("h2", "h3", "h4", "h5")), None)
        anchor = next((n.attrs.get("id") for n in (heading.walk() if heading else []) if n.tag == "a" and n.attrs.get("id")), None)
        if not anchor:
            continue
        title = re.sub(r"^[\d.]+\s*", "", inline(heading))
        kinds = [n for n in node.walk()]
        has_table = any(n.tag == "div" and {"table", "informaltable"} & set(n.classes()) for n in kinds)
        has_code = any(n.tag == "pre" for n in kinds) or any(
            n.tag == "code" and "/" in raw(n) for n in kinds)
        found[anchor] = (title, blocks(node), has_table, has_code)
    return found


def chinese(prose_zh, prose_en):
    """Whether the Chinese prose is a translation: mostly Chinese, no paragraph left as is."""
    text = "".join(prose_zh)
    cjk, latin = len(CJK.findall(text)), len(re.findall(r"[A-Za-z]", text))
    untranslated = set(p for p in prose_en if len(p.split()) > 4) & set(prose_zh)
    return cjk >= 150 and cjk > latin and not untranslated


per_chapter = []
for en_path in sorted(glob.glob(os.path.join(src, "ch[0-9][0-9].en.html"))):
    zh_path = en_path.replace(".en.html", ".zh-cn.html")
    if not os.path.exists(zh_path):
        continue
    en, zh = sections(en_path), sections(zh_path)
    picked = []
    for anchor, (title, b_en, table, code) in en.items():
        if anchor not in zh or table or not code:
            continue
        words = sum(len(b.split()) for _, b in b_en)
        title_zh, b_zh, _, _ = zh[anchor]
        if not 150 <= words <= 400 or len(b_zh) != len(b_en):
            continue
        prose = [i for i, (verbatim, _) in enumerate(b_en) if not verbatim]
        if not chinese([b_zh[i][1] for i in prose], [b_en[i][1] for i in prose]):
            continue
        picked.append((os.path.basename(en_path), anchor, words, title, b_en, title_zh, b_zh))
    per_chapter.append(picked)

chosen = []
rank = 0
while len(chosen) < want and any(rank < len(p) for p in per_chapter):
    chosen.extend(p[rank] for p in per_chapter if rank < len(p))
    rank += 1
chosen = chosen[:want]
if len(chosen) < want:
    sys.exit(f"only {len(chosen)} sections qualify, {want} asked")
with open(os.path.join(out, "sections.tsv"), "w", encoding="utf-8") as tsv:
    tsv.write("n\tchapter\tanchor\twords\ttitle\n")
    for i, (chapter, anchor, words, title, b_en, title_zh, b_zh) in enumerate(chosen, 1):
        for lang, t, b in (("en", title, b_en), ("zh", title_zh, b_zh)):
            with open(os.path.join(out, f"{lang}-{i}.txt"), "w", encoding="utf-8") as f:
                f.write("\n\n".join([t] + [text for _, text in b]) + "\n")
        tsv.write(f"{i}\t{chapter}\t{anchor}\t{words}\t{title}\n")
PY

mkdir -p "$DIR"
rm -f "$DIR"/.complete-* "$DIR"/en-*.txt "$DIR"/zh-*.txt
mv "$tmp"/out/* "$DIR"/
touch "$stamp"
log "cut $N aligned sections into $DIR (sections.tsv names them)"
