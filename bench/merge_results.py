"""Merge bench result files (docs/07-bench-format.md) measured on one machine into one.

The rows are concatenated in the order given; the machine blocks must agree (same GPU,
driver, torch, CUDA, CUTLASS and FACT commit; a field a part leaves null, e.g. torch for
kernel-level rows, is taken from the others), else the merge is refused. The merged
file's command lists each part's command.

With ``--replace BASE.json`` the parts' rows replace BASE's rows of the same problem,
policy and model dtype instead (the others are kept): each row then names the commit it
was measured at (``fact_commit``), so parts of other commits may be merged; the machine
block must agree otherwise and takes the newest part's commit.

Usage::

    python bench/merge_results.py PART.json [PART.json ...] --out MERGED.json
    python bench/merge_results.py --replace BASE.json PART.json ... --out BASE.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from fact.report import bench_document, write_bench  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Merge the parts; returns 0, or 2 when their machines differ."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--replace", default=None, metavar="BASE.json",
                        help="replace BASE's rows of the same problem, policy and model dtype")
    args = parser.parse_args(argv)
    if args.replace:
        return replace_rows(args.replace, args.parts, args.out)
    docs = []
    for path in args.parts:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    machine: dict = {}
    for path, doc in zip(args.parts, docs):
        if not merge_machine(machine, doc["machine"], path):
            return 2
    command = " && ".join(d["command"] for d in docs)
    merged = bench_document(command, [r for d in docs for r in d["rows"]], machine)
    merged["date"] = docs[0]["date"]  # when the measuring started
    write_bench(args.out, merged)
    print(f"wrote {args.out}")
    return 0


def merge_machine(machine: dict, part: dict, path: str, may_differ: tuple = ()) -> bool:
    """Fold a part's machine block into ``machine`` (a null field takes the other's value, a
    field in ``may_differ`` the part's); False, with the reason on stderr, when they differ."""
    for key, value in part.items():
        if value is None:
            continue
        if key not in may_differ and machine.get(key) not in (None, value):
            print(f"{path}: measured on another machine or commit ({key} {value!r} vs {machine[key]!r}); "
                  "not merged", file=sys.stderr)
            return False
        machine[key] = value
    return True


def row_key(row: dict) -> tuple:
    """What a replacing row must share with the row it replaces."""
    return row.get("problem"), row.get("policy"), row.get("model_dtype")


def replace_rows(base_path: str, parts: list[str], out: str) -> int:
    """BASE's rows with the parts' rows put in place of (or after) those of the same key;
    returns 0, or 2 when a part's machine differs in anything but the commit."""
    with open(base_path, encoding="utf-8") as f:
        base = json.load(f)
    machine = dict(base["machine"])
    rows = [dict(r, fact_commit=r.get("fact_commit") or machine.get("fact_commit")) for r in base["rows"]]
    commands = [base["command"]]
    for path in parts:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not merge_machine(machine, doc["machine"], path, may_differ=("fact_commit",)):
            return 2
        commands.append(doc["command"])
        for new in doc["rows"]:
            new = dict(new, fact_commit=new.get("fact_commit") or doc["machine"].get("fact_commit"))
            at = [i for i, r in enumerate(rows) if row_key(r) == row_key(new)]
            if at:
                rows[at[0]] = new
            else:
                rows.append(new)
    merged = bench_document(" && ".join(commands), rows, machine)
    write_bench(out, merged)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
