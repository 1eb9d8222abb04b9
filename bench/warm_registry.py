"""Realize every plan of a finished suite run again, with the registry the run filled.

For each run directory under ``--work`` (as ``bench/suite.py`` leaves them: ``plan.json``
and ``realized.json``), runs ``factc realize`` on the same plan under the same policy and
reports per pattern whether the registry answered, how many kernels were compiled and the
wall seconds of the whole ``factc realize`` call (process start, GPU probe and cache lookups
included). Writes a JSON document and prints a markdown table.

Usage::

    python bench/warm_registry.py --work /tmp/fact-work --out warm.json [--factc build/factc]

Exit status: 0 when every pattern was a registry hit with nothing compiled, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def _warm_one(factc: str, run_dir: str) -> dict:
    with open(os.path.join(run_dir, "realized.json"), encoding="utf-8") as f:
        policy = json.load(f)["policy"]
    out = os.path.join(run_dir, "realized-warm.json")
    t0 = time.perf_counter()
    proc = subprocess.run([factc, "realize", os.path.join(run_dir, "plan.json"),
                           "--policy", policy, "-o", out],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    row = {"run": os.path.basename(run_dir.rstrip("/")), "policy": policy,
           "exit": proc.returncode, "realize_wall_s": round(wall, 3)}
    if proc.returncode != 0 or not os.path.isfile(out):
        row["error"] = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return row
    with open(out, encoding="utf-8") as f:
        r = json.load(f)
    pats = r.get("patterns", [])
    row["patterns"] = len(pats)
    row["registry_hits"] = sum(1 for p in pats if str(p.get("registry", "")).startswith("hit"))
    row["kernels_compiled"] = len({c["kernel"].split("+")[0] for p in pats
                                   for c in p.get("candidates", [])
                                   if c.get("impl") == "cutlass" and c.get("cached") is False})
    row["winners"] = [p.get("winner") for p in pats]
    return row


def main(argv: list[str] | None = None) -> int:
    """Realize each run's plan again; returns 0 when all were registry hits."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="bench/suite.py's --work directory")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--factc", default=os.environ.get("FACT_FACTC",
                                                          os.path.join(REPO, "build", "factc")))
    args = parser.parse_args(argv)
    runs = sorted(d for d in (os.path.join(args.work, n) for n in os.listdir(args.work))
                  if os.path.isfile(os.path.join(d, "realized.json")))
    rows = [_warm_one(args.factc, d) for d in runs]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"command": "python bench/warm_registry.py " + " ".join(argv or sys.argv[1:]),
                   "rows": rows}, f, indent=2)
        f.write("\n")
    print("| run | policy | patterns | registry hits | kernels compiled | factc realize wall s |")
    print("|---|---|---|---|---|---|")
    ok = True
    for r in rows:
        hit_all = r.get("registry_hits") == r.get("patterns") and r.get("kernels_compiled") == 0
        ok &= hit_all and r["exit"] == 0
        print(f"| {r['run']} | {r['policy']} | {r.get('patterns', '—')} | "
              f"{r.get('registry_hits', '—')} | {r.get('kernels_compiled', '—')} | "
              f"{r['realize_wall_s']:.2f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
