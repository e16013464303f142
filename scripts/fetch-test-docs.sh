#!/usr/bin/env bash
# Fetch real documents that nobody on this project wrote, for the extraction tests.
#
#   scripts/fetch-test-docs.sh [DIR]        (default: target/test-docs)
#
# What lands in DIR:
#   debian-reference/debian-reference.{en,zh-cn}.pdf   from the Debian packages
#       debian-reference-en / debian-reference-zh-cn: copied when installed, else taken from
#       the package with `apt-get download` (never installed)
#   debian-reference/en-30-pages.pdf, en-40k.txt   made from the English PDF (qpdf, poppler-utils)
#   ocrmypdf/resources/   ocrmypdf's test resources (scans: linn.pdf + linn.txt, skew.pdf, …)
#   pypdf/resources/      pypdf's test resources (encrypted, broken and odd PDFs)
# The two source tarballs come from the Python package index through `pip download`, pinned.
#
# Nothing is installed: the programs the tests use (tesseract with chi_sim and eng,
# poppler-utils, qpdf, pango-view with a CJK font) are named with their packages when missing;
# `.ci/run` installs them. Nothing is written outside DIR but temporary folders.
#
# Idempotent: whatever is already in DIR is kept; run it as often as you like. Anything that
# cannot be had (no network, no apt-get) is skipped with a message, and `cargo test` reports
# the tests that need it as ignored. Never commit DIR.
set -euo pipefail

DIR=${1:-target/test-docs}
OCRMYPDF_VERSION=17.13.0
PYPDF_VERSION=7.1.0

log() { printf 'fetch-test-docs: %s\n' "$*" >&2; }

mkdir -p "$DIR"

# Programs the tests use: named, with their packages, when missing.
need_program() { # program package...
    local program=$1
    shift
    command -v "$program" >/dev/null 2>&1 || log "missing: $program (install: $*)"
}
need_program pdftotext poppler-utils
need_program qpdf qpdf
need_program tesseract tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim
if command -v tesseract >/dev/null 2>&1 && ! tesseract --list-langs 2>&1 | grep -qx chi_sim; then
    log "missing: tesseract's chi_sim (install: tesseract-ocr-chi-sim)"
fi
need_program pango-view pango1.0-tools
if command -v fc-list >/dev/null 2>&1 && [ -z "$(fc-list :lang=zh 2>/dev/null)" ]; then
    log "missing: a CJK font for rendering (install: fonts-wqy-microhei)"
fi

# A file of a Debian package, without installing it: apt-get download, then dpkg-deb.
from_package() { # package member dest
    local package=$1 member=$2 dest=$3 work
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || return 1
    work=$(mktemp -d)
    if (cd "$work" && apt-get download "$package") >/dev/null 2>&1; then
        dpkg-deb --fsys-tarfile "$work"/*.deb | tar -x -C "$work" "./$member" 2>/dev/null || true
    fi
    if [ -s "$work/$member" ]; then
        cp "$work/$member" "$dest.tmp" && mv "$dest.tmp" "$dest"
    fi
    rm -rf "$work"
    [ -s "$dest" ]
}

# debian-reference, English and Simplified Chinese.
mkdir -p "$DIR/debian-reference"
for lang in en zh-cn; do
    dest="$DIR/debian-reference/debian-reference.$lang.pdf"
    [ -s "$dest" ] && continue
    src="usr/share/debian-reference/debian-reference.$lang.pdf"
    if [ -s "/$src" ]; then
        cp "/$src" "$dest.tmp" && mv "$dest.tmp" "$dest"
        log "copied debian-reference.$lang.pdf"
    elif from_package "debian-reference-$lang" "$src" "$dest"; then
        log "took debian-reference.$lang.pdf from the debian-reference-$lang package"
    else
        log "skip: debian-reference.$lang.pdf (neither installed nor downloadable: debian-reference-$lang)"
    fi
done

# Two long English documents made from the English PDF, for the end-to-end runs on the local
# model: a 30-page PDF (pages 127-156, some 60 KB of text) and a 40 KB text (pages 24-45,
# cut at a line end).
en_pdf="$DIR/debian-reference/debian-reference.en.pdf"
pages_pdf="$DIR/debian-reference/en-30-pages.pdf"
if [ -s "$en_pdf" ] && [ ! -s "$pages_pdf" ] && command -v qpdf >/dev/null 2>&1; then
    qpdf --empty --pages "$en_pdf" 127-156 -- "$pages_pdf.tmp.pdf"
    mv "$pages_pdf.tmp.pdf" "$pages_pdf"
    log "made en-30-pages.pdf"
fi
text_40k="$DIR/debian-reference/en-40k.txt"
if [ -s "$en_pdf" ] && [ ! -s "$text_40k" ] && command -v pdftotext >/dev/null 2>&1; then
    pdftotext -f 24 -l 45 "$en_pdf" "$text_40k.all"
    head -c 40960 "$text_40k.all" | sed '$d' >"$text_40k.tmp"
    mv "$text_40k.tmp" "$text_40k"
    rm -f "$text_40k.all"
    log "made en-40k.txt"
fi

# A source distribution's test resources: fetch_resources NAME VERSION MEMBER
# (MEMBER: the folder inside the tarball, below NAME-VERSION/).
fetch_resources() {
    local name=$1 version=$2 member=$3
    local dest="$DIR/$name"
    local stamp="$dest/.complete-$version"
    [ -f "$stamp" ] && return 0
    local pip
    if command -v pip3 >/dev/null 2>&1; then
        pip=pip3
    elif command -v pip >/dev/null 2>&1; then
        pip=pip
    else
        log "skip: $name test resources need pip (apt-get install python3-pip)"
        return 0
    fi
    local cache="$DIR/.cache"
    mkdir -p "$cache"
    local tarball="$cache/$name-$version.tar.gz"
    if [ ! -s "$tarball" ]; then
        local tmp
        tmp=$(mktemp -d)
        if ! TMPDIR="$tmp" "$pip" download --quiet --no-cache-dir --no-deps --no-binary :all: \
            -d "$tmp" "$name==$version" >"$tmp/log" 2>&1; then
            log "skip: cannot download $name $version:"
            tail -n 3 "$tmp/log" >&2
            rm -rf "$tmp"
            return 0
        fi
        mv "$tmp/$name-$version.tar.gz" "$tarball"
        rm -rf "$tmp"
    fi
    local unpack
    unpack=$(mktemp -d)
    tar -xzf "$tarball" -C "$unpack" "$name-$version/$member"
    rm -rf "$dest"
    mkdir -p "$dest"
    mv "$unpack/$name-$version/$member" "$dest/resources"
    rm -rf "$unpack"
    touch "$stamp"
    log "unpacked $name $version $member"
}

fetch_resources ocrmypdf "$OCRMYPDF_VERSION" tests/resources
fetch_resources pypdf "$PYPDF_VERSION" resources

log "documents are in $DIR"
