"""Benchmark the four example GEMM problems with ``fact optimize`` and merge the results.

Each problem runs in its own process (``python -m fact.cli optimize ...``), so one problem's
memory and compiled state cannot affect the next. The rows are merged into one docs/07-bench-format.md file
(default ``bench/results/skeleton-h200.json``) with its markdown table beside it (``.md``).

Usage::

    python bench/skeleton.py [--out bench/results/skeleton-h200.json] [--precision POLICY]
                             [--jobs N] [--inductor] [--only square_4096 ...]

Exit status: 0 when every problem ran and verified, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

from fact.report import bench_document, write_bench  # noqa: E402

# Problem -> its policy: the fp32 models at tf32 (what torch's "high" gives them), the bf16
# model at bf16 (it runs in its own dtype, docs/00-design.md §4).
PROBLEMS = {"square_4096": "tf32", "batched_128x512x1024x2048": "tf32",
            "large_k_256x256x524288": "tf32", "linear_bf16_8192x4096x4096": "bf16"}


def _run_one(name: str, args: argparse.Namespace, json_path: str) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "fact.cli", "optimize",
           os.path.join(REPO, "examples", f"{name}.py"),
           "--precision", args.precision or PROBLEMS[name],
           "--out", os.path.join(args.work, name), "--json", json_path]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    if args.inductor:
        cmd.append("--inductor")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(REPO, "python"),
                                                      env.get("PYTHONPATH")]))
    print(f"== {name}: {shlex.join(cmd)}", flush=True)
    try:
        proc = subprocess.run(cmd, env=env, cwd=REPO, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"== {name}: no result within {args.timeout} s (killed)", flush=True)
        return 124, shlex.join(cmd)
    return proc.returncode, shlex.join(cmd)


def main(argv: list[str] | None = None) -> int:
    """Run the problems, merge their rows, write JSON and markdown; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                      "skeleton-h200.json"))
    parser.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default=None,
                        help="one policy for all problems (default: each problem's own)")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--inductor", action="store_true")
    parser.add_argument("--work", default=os.path.join(REPO, "out", "skeleton"),
                        help="working directories of the runs")
    parser.add_argument("--timeout", type=int, default=420,
                        help="seconds one problem may take (compile, tune, verify, time)")
    parser.add_argument("--only", nargs="+", choices=PROBLEMS, default=list(PROBLEMS))
    args = parser.parse_args(argv)

    rows: list[dict] = []
    machine: dict | None = None
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fact-skeleton-") as tmp:
        for name in args.only:
            json_path = os.path.join(tmp, f"{name}.json")
            rc, _ = _run_one(name, args, json_path)
            if not os.path.isfile(json_path):
                failed.append(f"{name} (exit {rc}, no result)")
                continue
            with open(json_path, encoding="utf-8") as f:
                doc = json.load(f)
            machine = machine or doc["machine"]
            rows.extend(doc["rows"])
            if rc != 0:
                failed.append(f"{name} (exit {rc})")
    if not rows:
        print("no results: " + "; ".join(failed), file=sys.stderr)
        return 1
    command = "python bench/skeleton.py " + shlex.join(argv if argv is not None
                                                        else sys.argv[1:])
    write_bench(args.out, bench_document(command.strip(), rows, machine or {}))
    print(f"wrote {args.out} and {os.path.splitext(args.out)[0]}.md")
    if failed:
        print("failed: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
