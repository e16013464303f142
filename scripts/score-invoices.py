#!/usr/bin/env python3
"""Score an extraction run's invoices against their truth, cell by cell, and say which wrong
cells zhi doubted.

    scripts/score-invoices.py OUT TRUTH.jsonl [--as TRUTH_FIELD=FIELD ...]

`--as date=issue_date` scores the truth's `date` against the answer's `issue_date` (the builtin
`invoice-to-excel` names its fields apart from examples/invoice.schema.json).

OUT is a zhi output folder (its latest record per document is read from .zhi/runs/*/results.jsonl);
TRUTH holds one JSON object per line: `file` (the document's name) and the fields' true values.
Values are compared as grounding does: case, space and punctuation ignored, numbers by value,
dates by their digits.
"""
import json, os, re, sys, unicodedata

def norm(v):
    if v is None:
        return ""
    if v in ("¥", "￥", "元", "人民币"):
        return "cny"
    if isinstance(v, (int, float)):
        return f"{float(v):.2f}"
    s = unicodedata.normalize("NFKC", str(v)).lower()
    n = re.sub(r"[,\s¥$€£]", "", s)
    if re.fullmatch(r"-?\d+(\.\d+)?", n):
        return f"{float(n):.2f}"
    digits = re.findall(r"\d+", s)
    months = {m: i + 1 for i, m in enumerate(["jan","feb","mar","apr","may","jun","jul","aug","sep","oct","nov","dec"])}
    words = re.findall(r"[a-z]+", s)
    month = next((months[w[:3]] for w in words if w[:3] in months), None)
    if month and len(digits) == 2:
        day, year = sorted(digits, key=len)
        return f"{int(year):04d}-{month:02d}-{int(day):02d}"
    if len(digits) == 3 and len(digits[0]) == 4 and not re.search(r"[a-z]", s.replace("年","").replace("月","").replace("日","")):
        return f"{int(digits[0]):04d}-{int(digits[1]):02d}-{int(digits[2]):02d}"
    return re.sub(r"[\s\.,;:'\"()（）]", "", s)

def score_fields():
    """scripts/score-fields.py, whose reader of a run's records this script shares."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "score-fields.py")
    spec = importlib.util.spec_from_file_location("score_fields", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def main():
    out, truth_path = sys.argv[1], sys.argv[2]
    alias = {}
    args = sys.argv[3:]
    while args:
        if args[0] == "--as" and len(args) > 1 and "=" in args[1]:
            a, b = args[1].split("=", 1)
            alias[a] = b
            args = args[2:]
        else:
            sys.exit(f"score-invoices: unknown argument {args[0]!r}")
    truth = [json.loads(l) for l in open(truth_path, encoding="utf-8") if l.strip()]
    latest = score_fields().latest_records(out)
    cells = right = flagged_wrong = unflagged_wrong = flagged_right = 0
    strong_docs = 0
    rows = []
    for t in truth:
        r = latest.get(t["file"])
        obj = {}
        if r and r.get("status") != "failed":
            p = os.path.join(out, r["output_dir"], "extracted.json")
            if os.path.exists(p):
                obj = json.load(open(p, encoding="utf-8"))
        doubted = {d.get("field") for d in (r or {}).get("doubts", [])}
        if r and r.get("escalated"):
            strong_docs += 1
        for k, v in t.items():
            if k == "file":
                continue
            cells += 1
            field = alias.get(k, k)
            ok = norm(obj.get(field)) == norm(v)
            right += ok
            flag = field in doubted
            if not ok and flag:
                flagged_wrong += 1
            elif not ok:
                unflagged_wrong += 1
            elif flag:
                flagged_right += 1
            rows.append((t["file"], field, ok, flag, obj.get(field), v))
    for f, k, ok, flag, got, want in rows:
        if not ok or flag:
            mark = ("right" if ok else "WRONG") + (" doubted" if flag else "")
            print(f"{f:22} {k:15} {mark:14} got {got!r} want {want!r}")
    summary = {"cells": cells, "right": right, "wrong_doubted": flagged_wrong,
               "wrong_not_doubted": unflagged_wrong, "right_doubted": flagged_right,
               "documents": len(truth), "escalated_documents": strong_docs}
    print(json.dumps(summary))

main()
