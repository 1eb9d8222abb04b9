"""Realize plans with ``factc realize`` one or more times, sharing the tuning registry.

Each run directory under ``--plans`` holds a ``plan.json`` (``bench/suite.py``'s work
directories do, as do directories made by ``fact optimize``). Every plan is realized under
its own policy (the plan's ``precision``) ``--passes`` times in a row: pass 1 tunes, or
replays what an earlier run recorded; later passes find the registry warm and should
compile nothing and tune nothing. Per pass and plan it records whether the registry
answered, how many kernels were compiled and the wall seconds of the whole ``factc realize``
call (process start, GPU probe and cache lookups included), and keeps each realized.json
(every candidate's verification and timing, cuBLAS included) under ``--out``.

Usage::

    python bench/realize_plans.py --plans DIR --out OUTDIR [--passes 2] [--tune-budget N]

Exit status: 0 when every pass after the first was a registry hit for every pattern with
nothing compiled, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def realization_summary(realized: dict) -> dict:
    """What a realized.json says realization did: patterns, how many the registry answered,
    and how many distinct CUTLASS kernels were compiled in that run (not cache hits)."""
    pats = realized.get("patterns", [])
    return {"patterns": len(pats),
            "registry_hits": sum(1 for p in pats
                                 if str(p.get("registry", "")).startswith("hit")),
            "kernels_compiled": len({c["kernel"].split("+")[0] for p in pats
                                     for c in p.get("candidates", [])
                                     if c.get("impl") == "cutlass" and c.get("cached") is False})}


def _realize(factc: str, run_dir: str, out_json: str, budget: int) -> dict:
    with open(os.path.join(run_dir, "plan.json"), encoding="utf-8") as f:
        policy = json.load(f)["precision"]
    cmd = [factc, "realize", os.path.join(run_dir, "plan.json"), "--policy", policy,
           "-o", out_json]
    if budget:
        cmd += ["--tune-budget", str(budget)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    row = {"run": os.path.basename(run_dir.rstrip("/")), "policy": policy,
           "exit": proc.returncode, "realize_wall_s": round(wall, 3)}
    if proc.returncode != 0 or not os.path.isfile(out_json):
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    with open(out_json, encoding="utf-8") as f:
        r = json.load(f)
    row.update(realization_summary(r))
    row["winners"] = [p.get("winner") for p in r.get("patterns", [])]
    return row


def main(argv: list[str] | None = None) -> int:
    """Realize every plan --passes times; returns 0 when the later passes were all warm."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", required=True, help="directory of run directories")
    parser.add_argument("--out", required=True, help="directory for realized.json copies "
                        "and realize-passes.json")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--tune-budget", type=int, default=0,
                        help="as the plans were realized with (another budget retunes)")
    parser.add_argument("--factc", default=os.environ.get("FACT_FACTC",
                                                          os.path.join(REPO, "build", "factc")))
    args = parser.parse_args(argv)
    runs = sorted(d for d in (os.path.join(args.plans, n) for n in os.listdir(args.plans))
                  if os.path.isfile(os.path.join(d, "plan.json")))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for k in range(1, args.passes + 1):
        for d in runs:
            out_json = os.path.join(args.out, f"{os.path.basename(d)}-pass{k}.json")
            rows.append({"pass": k, **_realize(args.factc, d, out_json, args.tune_budget)})
    with open(os.path.join(args.out, "realize-passes.json"), "w", encoding="utf-8") as f:
        json.dump({"command": "python bench/realize_plans.py " + " ".join(argv or sys.argv[1:]),
                   "rows": rows}, f, indent=2)
        f.write("\n")
    print("| pass | run | policy | patterns | registry hits | kernels compiled | "
          "factc realize wall s |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for r in rows:
        if r["pass"] > 1:
            ok &= (r["exit"] == 0 and r.get("kernels_compiled") == 0
                   and r.get("registry_hits") == r.get("patterns"))
        print(f"| {r['pass']} | {r['run']} | {r['policy']} | {r.get('patterns', '—')} | "
              f"{r.get('registry_hits', '—')} | {r.get('kernels_compiled', '—')} | "
              f"{r['realize_wall_s']:.2f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
