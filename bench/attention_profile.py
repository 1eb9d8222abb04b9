"""Run one attention kernel of bench/attention_kernels.py on one problem of
bench/attention_problems.py a few times, for a profiler (Nsight Compute) to attach to.

    python bench/attention_profile.py --problem mingpt_attention_core_tf32 --kernel NAME --launches 3
    ncu --clock-control none --section SourceCounters -k regex:attention -s 2 -c 1 \\
        python bench/attention_profile.py ...

The library is build/attention_check/lib<NAME>.so (``attention_check.py --build-only`` makes it); the
first launch is checked against float64, so a profile is never of a kernel that computes the wrong thing.
Exits 1 if the check fails.
"""

from __future__ import annotations

import argparse
import ctypes
import sys

from attention_problems import ALL_PROBLEMS, check_kernel, make_problem, reference64
from attention_kernels import ROOT


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", required=True, choices=sorted(ALL_PROBLEMS))
    ap.add_argument("--kernel", required=True, help="the kernel's name (its library is build/attention_check/lib<NAME>.so)")
    ap.add_argument("--work", default="build/attention_check")
    ap.add_argument("--launches", type=int, default=3, help="launches after the checked one")
    opts = ap.parse_args()
    import torch

    P = make_problem(opts.problem)
    res, handle = check_kernel(P, reference64(P), ROOT / opts.work / f"lib{opts.kernel}.so", opts.kernel)
    print(f"{opts.kernel} on {opts.problem}: verified {res['verified']}, max rel err {res.get('max_rel_err')}")
    if not res["verified"]:
        return 1
    fact = handle[0]
    for _ in range(opts.launches):
        fact()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
