"""A KernelBench problem through ``torch.compile(backend="fact")`` with a dynamic batch.

The first call (at ``--first``) marks the batch dim dynamic (``torch._dynamo.mark_dynamic``),
so Dynamo hands the backend one graph whose batch is a symbol; FACT tunes it per bucket of
the batch (powers of two from the first batch up to ``--bound``, docs/04, "Buckets") and
each later call picks its bucket's kernel. Per batch it prints: the bucket each pattern ran
(or ATen), the max relative error against float64, and the median time of the compiled
module and of eager under the same policy (alternating, L2 flushed, bench/BENCH.md's
protocol), plus how many graphs Dynamo compiled (1 for the dynamic graph, one more for
batch 1, which Dynamo specializes).

    python bench/dynamic_batch.py examples/blocks/L3-44_minigpt_block.py \
        --batches 1,8,32,128,256 --first 8 --bound 256 --precision tf32 --tune-budget 2

``--plan-only`` (no GPU needed) exports the dynamic graph and prints its plan's symbols and
patterns, then stops.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fact.bench import float64_reference, rel_errors, time_variants  # noqa: E402
from fact.precision import fact_precision  # noqa: E402
from fact.problem import load_problem  # noqa: E402


def _inputs(problem, batch: int, device: str) -> list[torch.Tensor]:
    """The problem's inputs with their leading (batch) dim resized to ``batch``."""
    return [torch.randn(batch, *x.shape[1:], dtype=x.dtype, device=device)
            for x in problem.inputs]


def _plan_only(problem, first: int, bound: int) -> int:
    from fact.export import export, write_graph
    from fact.factc import find_factc
    x = _inputs(problem, first, "cpu")
    dims = tuple({0: torch.export.Dim("B", min=2, max=bound)} for _ in x)
    graph = export(problem.model.eval(), x, dynamic_shapes=dims)
    with tempfile.TemporaryDirectory() as tmp:
        write_graph(graph, os.path.join(tmp, "graph.json"))
        subprocess.run([find_factc(), "discover", os.path.join(tmp, "graph.json"), "--text",
                        "--policy", "tf32"], check=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("--batches", default="1,8,32,128,256")
    ap.add_argument("--first", type=int, default=8, help="the batch of the first call")
    ap.add_argument("--bound", type=int, default=256, help="the largest bucket")
    ap.add_argument("--precision", default="tf32")
    ap.add_argument("--tune-budget", type=int, default=2)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--out", help="write the rows as JSON here")
    ap.add_argument("--plan-only", action="store_true")
    args = ap.parse_args(argv)
    problem = load_problem(args.problem)
    if args.plan_only:
        return _plan_only(problem, args.first, args.bound)
    device = "cuda"
    model = problem.model.to(device).eval()
    counts = torch._dynamo.utils.counters
    counts.clear()
    compiled = torch.compile(model, backend="fact", options={
        "precision": args.precision, "tune_budget": args.tune_budget,
        "bucket_bound": args.bound})
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    with torch.inference_mode():
        first = _inputs(problem, args.first, device)
        for x in first:
            torch._dynamo.mark_dynamic(x, 0)
        compiled(*first)
        for batch in batches:
            x = first if batch == args.first else _inputs(problem, batch, device)
            out = compiled(*x)
            check = rel_errors(out, float64_reference(model, x), args.precision)
            with fact_precision(args.precision):
                times = time_variants({"fact": lambda: compiled(*x), "eager": lambda: model(*x)},
                                      trials=args.trials)
            rows.append({"batch": batch, "max_rel_err": check.max_rel_err, "verified": check.ok,
                         "fact_ms": times["fact"].median_ms, "eager_ms": times["eager"].median_ms})
            print(f"batch {batch:5d}: fact {times['fact'].median_ms:8.3f} ms  eager "
                  f"{times['eager'].median_ms:8.3f} ms  ({times['eager'].median_ms / times['fact'].median_ms:.2f}x)"
                  f"  max rel err {check.max_rel_err:.2e} {'ok' if check.ok else 'FAILED'}")
    print(f"graphs compiled by Dynamo: {counts['stats']['unique_graphs']}")
    from fact.buckets import BucketedBinding
    import gc
    for obj in gc.get_objects():  # the bucket bindings of the compiled modules
        if isinstance(obj, BucketedBinding):
            ranges = [f"{b['lo']}..{b['hi']}:{b.get('impl')}" for b in obj.buckets]
            print(f"pattern {obj.pattern['id']} ({obj.symbol}): calls per bucket "
                  f"{dict(zip(ranges, obj.calls_per_bucket))}; fallbacks {obj.fallback_reasons}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({"problem": problem.name, "rows": rows}, indent=1))
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
