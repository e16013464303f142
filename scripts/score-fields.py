#!/usr/bin/env python3
"""Score an extraction run against a truth file, cell by cell, and say per field which cells
zhi doubted: the manual pages of scripts/fetch-manpages.sh and the copyright files of
scripts/fetch-copyright.sh.

    scripts/score-fields.py OUT [TRUTH.jsonl] [--recorded]

OUT is a zhi output folder of `zhi run extract DIR -a schema=…` over the set's files (its
latest record per document is read from .zhi/runs/*/results.jsonl); TRUTH (default
target/test-docs/manpages/truth.jsonl) holds one JSON object per line: `file` and the fields
scored (every other key but `lang`, `page` and `package`). `--recorded` scores only the
documents the run has a record of (a run stopped part way). `--cheap` scores the cheap
model's own answer on a ladder run instead of the answer kept: for a job the ladder sent up,
the last answer of `glm-4-flash` in its transcript, doubted in the fields the ladder's note
names (`glm-4-flash's answer is doubted (FIELD (CHECK: …); …)`), as the bench reads it.

A cell is right when, both sides NFKC-normalised (full-width is half-width), lower-cased, white
space runs as one space and a trailing period dropped, they are equal; a `section` with a
suffix (`3const`) is also right as its number (`3`); a `summary` is also right when both sides
are equal once everything but letters and digits is dropped; a `source` is also right without
its trailing slash. The bench (`benches/common/cells.rs`) compares the same way.
"""
import glob, json, os, re, sys, unicodedata

NOT_SCORED = ("file", "lang", "page", "package")


def text(v):
    if v is None:
        return ""
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    s = " ".join(unicodedata.normalize("NFKC", s).lower().split())
    for end in (".", "。"):
        if s.endswith(end):
            s = s[: -len(end)].rstrip()
            break
    return s


def right(field, got, want):
    got, want = text(got), text(want)
    if not got:
        return not want
    if got == want:
        return True
    if field == "section":
        number = re.match(r"\d*", want).group(0)
        return bool(number) and got == number
    if field == "source":
        return got.rstrip("/") == want.rstrip("/")
    if field == "summary":
        bare = lambda s: "".join(c for c in s if c.isalnum())
        return bool(bare(got)) and bare(got) == bare(want)
    return False


CHEAP = "glm-4-flash"


def latest_records(out):
    """The latest record of each document (by file name) in a zhi output folder's runs."""
    latest = {}
    for path in sorted(glob.glob(os.path.join(out, ".zhi/runs/*/results.jsonl"))):
        for line in open(path, encoding="utf-8"):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("status") in ("succeeded", "cached", "failed"):
                latest[os.path.basename(r["input"])] = r
    return latest


def cheap_answer(out, r):
    """The cheap model's answer and doubted fields, from a climbed job's transcript."""
    entries = []
    if r.get("transcript"):
        for line in open(os.path.join(out, r["transcript"]), encoding="utf-8"):
            try:
                entries.append(json.loads(line))
            except ValueError:
                pass
    asked = [e for e in entries if e.get("type") == "request" and e.get("model") == CHEAP]
    notes = [e.get("text", "") for e in entries if e.get("type") == "note"]
    if not asked or any(n.startswith(CHEAP + " failed (") for n in notes):
        return None, set()
    content = ((asked[-1].get("answer") or {}).get("content") or "").strip()
    start, end = content.find("{"), content.rfind("}")
    try:
        obj = json.loads(content[start:end + 1]) if start >= 0 else None
    except ValueError:
        obj = None
    doubted = set()
    for n in notes:
        if n.startswith(CHEAP + "'s answer is doubted ("):
            body = n.split("doubted (", 1)[1]
            doubted |= {m.group(1) for m in re.finditer(r"(?:^|; )([\w\-]+)[.\[\w\]]* \(", body)}
    return obj, doubted


def main():
    flags = ("--recorded", "--cheap")
    args = [a for a in sys.argv[1:] if a not in flags]
    recorded = "--recorded" in sys.argv[1:]
    cheap = "--cheap" in sys.argv[1:]
    if len(args) not in (1, 2):
        sys.exit(__doc__.split("\n\n")[1])
    out = args[0]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    truth_path = args[1] if len(args) == 2 else os.path.join(repo, "target/test-docs/manpages/truth.jsonl")
    truth = [json.loads(l) for l in open(truth_path, encoding="utf-8") if l.strip()]
    latest = latest_records(out)
    fields = [k for k in truth[0] if k not in NOT_SCORED] if truth else []
    if recorded:
        truth = [t for t in truth if t["file"] in latest]
    table = {f: {"wrong_doubted": 0, "wrong_not_doubted": 0, "right_doubted": 0,
                 "right_not_doubted": 0, "no_answer": 0} for f in fields}
    strong_docs = 0
    for t in truth:
        r = latest.get(t["file"])
        obj = None
        if r and r.get("status") != "failed":
            p = os.path.join(out, r["output_dir"], "extracted.json")
            if os.path.exists(p):
                obj = json.load(open(p, encoding="utf-8"))
        doubted = {re.split(r"[.\[]", d.get("field") or "")[0] for d in (r or {}).get("doubts", [])}
        if r and r.get("escalated"):
            strong_docs += 1
            if cheap:
                obj, doubted = cheap_answer(out, r)
        for f in fields:
            if obj is None:
                table[f]["no_answer"] += 1
                print(f"{t['file']:12} {f:8} NO ANSWER      want {t[f]!r}")
                continue
            ok = right(f, obj.get(f), t[f])
            flag = f in doubted
            table[f][("right" if ok else "wrong") + ("_doubted" if flag else "_not_doubted")] += 1
            if not ok or flag:
                mark = ("right" if ok else "WRONG") + (" doubted" if flag else "")
                print(f"{t['file']:12} {f:8} {mark:14} got {obj.get(f)!r} want {t[f]!r}")
    cells = len(truth) * len(fields)
    right_cells = sum(c["right_doubted"] + c["right_not_doubted"] for c in table.values())
    print(json.dumps({"cells": cells, "right": right_cells, "documents": len(truth),
                      "escalated_documents": strong_docs, "fields": table}))


if __name__ == "__main__":
    main()
