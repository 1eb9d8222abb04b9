"""Merge bench result files (docs/07-bench-format.md) measured on one machine into one.

The rows are concatenated in the order given; the machine blocks must agree (same GPU,
driver, torch, CUDA, CUTLASS and FACT commit; a field a part leaves null, e.g. torch for
kernel-level rows, is taken from the others), else the merge is refused. The merged
file's command lists each part's command.

Usage::

    python bench/merge_results.py PART.json [PART.json ...] --out MERGED.json
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
    args = parser.parse_args(argv)
    docs = []
    for path in args.parts:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    machine: dict = {}
    for path, doc in zip(args.parts, docs):
        for key, value in doc["machine"].items():
            if value is None:
                continue
            if machine.get(key) not in (None, value):
                print(f"{path}: measured on another machine or commit ({key} {value!r} vs "
                      f"{machine[key]!r}); not merged", file=sys.stderr)
                return 2
            machine[key] = value
    command = " && ".join(d["command"] for d in docs)
    merged = bench_document(command, [r for d in docs for r in d["rows"]], machine)
    merged["date"] = docs[0]["date"]  # when the measuring started
    write_bench(args.out, merged)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
