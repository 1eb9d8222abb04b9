"""A block of examples/blocks/ through ``fact.optimize``, timed with and without CUDA-graph
replay of its generated module (docs/05-composition.md, "CUDA graph replay").

Both variants are the same loaded module on the same inputs: ``plain`` runs the generated
module call by call (``module.replay.mode = False``), ``replay`` copies the inputs in and
replays the one captured graph (and copies the output out). They are timed alternating, with
an L2 flush before each trial (fact.bench.time_variants), after fact.optimize verified the
module against float64.

    PYTHONPATH=python python bench/replay_block.py --block L3-44_minigpt_block --out $OUT/replay.json
    PYTHONPATH=python python bench/replay_block.py --block llama3_8b_block --small   # CI size

Prints one line per variant (median and spread in ms), the speedup, how many calls replayed
and, when the capture failed, why; with --out, a docs/07-bench-format.md file whose row's
``fact_ms`` is the replayed module and ``fact_plain_ms`` the module called call by call.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _block(name: str):
    path = os.path.join(ROOT, "examples", "blocks", f"{name}.py")
    if not os.path.isfile(path):
        sys.exit(f"no block {path}")
    spec = importlib.util.spec_from_file_location(f"block_{name.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--block", default="L3-44_minigpt_block",
                    help="examples/blocks/<name>.py (default L3-44_minigpt_block)")
    ap.add_argument("--small", action="store_true", help="the block's CI size")
    ap.add_argument("--precision", default="tf32", choices=("fp32", "tf32", "bf16"))
    ap.add_argument("--tune-budget", type=int, default=2, help="CUTLASS candidates per pattern")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--work", default=os.path.join(os.environ.get("OUT", "/tmp"), "replay-block"))
    ap.add_argument("--out", help="write a docs/07-bench-format.md result file")
    args = ap.parse_args(argv)

    import fact
    from fact.bench import time_variants
    from fact.precision import fact_precision

    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    block = _block(args.block)
    torch.manual_seed(0)
    init = block.small_init_inputs() if args.small else block.get_init_inputs()
    inputs = block.small_inputs() if args.small else block.get_inputs()
    model = block.Model(*init).cuda()
    inputs = [x.cuda() for x in inputs]
    fm = fact.optimize(model, inputs, precision=args.precision, tune_budget=args.tune_budget,
                       out_dir=os.path.join(args.work, args.block + ("-small" if args.small else "")))
    row = fm.report["row"]
    print(f"{args.block}: verified {row['verified']}, {len(fm.bindings)} FACT kernel calls, "
          f"{len(fm.aten_nodes())} ATen calls, replay blocker: {fm.replay.blocker or 'none'}")

    def with_mode(on: bool):
        class Mode:
            def __enter__(self):
                fm.replay.mode = on
                self.precision = fact_precision(args.precision)
                self.precision.__enter__()

            def __exit__(self, *exc):
                self.precision.__exit__(*exc)
                fm.replay.mode = None
        return Mode

    variants = {"plain": lambda: fm(*inputs), "replay": lambda: fm(*inputs)}
    timings = time_variants(variants, trials=args.trials,
                            contexts={"plain": with_mode(False), "replay": with_mode(None)})
    for name, t in timings.items():
        lo, hi = t.spread()
        print(f"{name:7s} {t.median_ms:8.4f} ms  [{lo:.4f}, {hi:.4f}]")
    print(f"speedup of replay over plain calls: "
          f"{timings['plain'].median_ms / timings['replay'].median_ms:.3f}x; "
          f"{fm.replay.replays} calls replayed; capture failed: {fm.replay.failed or 'no'}; "
          f"fallbacks: {sum(fm.fallback_counts().values())}")
    if args.out:
        doc = {"command": " ".join([sys.executable, *sys.argv]),
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "machine": {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__},
               "rows": [{**row, "problem": args.block + ("_small" if args.small else ""),
                         "fact_ms": round(timings["replay"].median_ms, 4),
                         "fact_spread_ms": [round(x, 4) for x in timings["replay"].spread()],
                         "fact_plain_ms": round(timings["plain"].median_ms, 4),
                         "fact_plain_spread_ms": [round(x, 4) for x in timings["plain"].spread()]}]}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
