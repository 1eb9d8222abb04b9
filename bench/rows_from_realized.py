"""Result rows (docs/07-bench-format.md) from ``factc realize`` output, kernel level.

``factc realize`` verifies every candidate on five draws against float64 and times the
survivors alternating round by round in one process (L2 flush before each trial, median of
30): FACT's CUTLASS kernels and the vendor paths on the same buffers. This script turns a
pattern's realized.json into one row: ``fact_ms`` is the winner's median (min–max spread),
``baselines_ms.cublas`` the faster of cuBLAS (``cublasGemmStridedBatchedEx``) and cuBLASLt
under the same policy, ``max_rel_err`` the winner's and ``cublas_max_rel_err`` that vendor
path's, on the same draws. The rows are kernel times; the module-level path
(``bench/suite.py``) also times eager and the custom-op overhead.

Usage::

    python bench/rows_from_realized.py REALIZED.json ... --out PART.json --commit SHA
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from fact.report import bench_document, write_bench  # noqa: E402


def row_from_realized(path: str) -> dict:
    """The row of the single pattern in ``path`` (a realized.json). Raises ValueError when
    the file has no GPU results or more than one pattern."""
    with open(path, encoding="utf-8") as f:
        r = json.load(f)
    if r.get("gpu") is None or len(r.get("patterns", [])) != 1:
        raise ValueError(f"{path}: needs one pattern realized on a GPU")
    p = r["patterns"][0]
    cands = {c["kernel"]: c for c in p["candidates"]}
    vendors = [c for c in p["candidates"] if c.get("impl") == "vendor" and c.get("status") == "ok"]
    vendor = min(vendors, key=lambda c: c["median_ms"])
    win = cands[p["winner"]]
    name = re.sub(r"(-pass\d+)?\.json$", "", os.path.basename(path))
    problem = name.rsplit("-", 1)[0] if name.endswith(("-fp32", "-tf32", "-bf16")) else name
    return {
        "problem": problem,
        "policy": r["policy"],
        "fact_ms": round(win["median_ms"], 4),
        "fact_spread_ms": [round(win["min_ms"], 4), round(win["max_ms"], 4)],
        "baselines_ms": {"cublas": round(vendor["median_ms"], 4)},
        "max_rel_err": win["max_rel_err"],
        "cublas_max_rel_err": vendor["max_rel_err"],
        "verified": win.get("status") == "ok",
        "compile_tune_s": round(r.get("build_wall_s", 0.0) + p.get("tune_s", 0.0), 2),
        "kernels": [p["winner"]],
        "vendor_kernel": vendor["kernel"],
        "level": "kernel (factc realize)",
        "cutlass_unavailable": p.get("cutlass_unavailable"),
    }


def main(argv: list[str] | None = None) -> int:
    """Write the rows of the given realized.json files as one result file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("realized", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--commit", required=True, help="FACT commit the engine was built from")
    parser.add_argument("--driver", default=None,
                        help="NVIDIA driver version (realized.json records the CUDA driver API)")
    args = parser.parse_args(argv)
    rows = [row_from_realized(p) for p in args.realized]
    with open(args.realized[0], encoding="utf-8") as f:
        first = json.load(f)
    machine = {"gpu": first["gpu"], "driver": args.driver, "torch": None,
               "cuda": first.get("cuda_runtime"), "cutlass": first.get("cutlass"),
               "fact_commit": args.commit}
    command = "python bench/rows_from_realized.py " + " ".join(argv or sys.argv[1:])
    write_bench(args.out, bench_document(command, rows, machine))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
