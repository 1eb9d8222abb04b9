"""The ``fact`` command.

``fact optimize PROBLEM.py [--precision fp32|tf32|bf16] [--out DIR] [--jobs N] [--json PATH]
[--problem-name NAME] [--inductor] [--max-autotune] [--remainder inductor|aten]
[--ablation-budget SECONDS] [--no-measure] [--progress|--no-progress] [-v]``

``fact report ARTIFACT``: the artifact's report, re-rendered (:mod:`fact.report_cmd`).

PROBLEM.py is in the KernelBench layout (``Model``, ``get_inputs()``,
``get_init_inputs()``). The model and inputs move to CUDA when it is available; the
pipeline is :mod:`fact.optimize`'s. What it does is logged on stderr (the ``fact``
logger, at INFO; ``-v`` adds the engine's own lines); compiling and tuning show progress
bars when stderr is a terminal. The results are printed on stdout.

Exit status of ``fact optimize`` (:data:`EXIT_CODES`): 0 done (verified), 1 verification
failed, 2 bad input or an engine error, 3 stopped for lack of a GPU after compiling.
``fact report``: 0, or 2 when the path is not an artifact.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shlex
import sys
from typing import Sequence

import torch

from fact.remainder import REMAINDERS

__all__ = ["main", "build_parser", "directory_arg", "count_arg", "EXIT_CODES", "EXIT_OK",
           "EXIT_NOT_VERIFIED", "EXIT_ERROR", "EXIT_NO_GPU"]

EXIT_OK = 0
EXIT_NOT_VERIFIED = 1
EXIT_ERROR = 2
EXIT_NO_GPU = 3
#: ``fact optimize``'s exit statuses and their meanings (docs/09-backend.md).
EXIT_CODES = {
    EXIT_OK: "done: the module verified against float64 (results printed)",
    EXIT_NOT_VERIFIED: "verification failed (the reason printed; no speedup claimed)",
    EXIT_ERROR: "bad input (problem file, flags) or an export or engine error",
    EXIT_NO_GPU: "no GPU: stopped after exporting, discovering and compiling",
}


def directory_arg(flag: str):
    """An argparse type for a directory FACT writes into: the path may not exist yet (it is
    created), but nothing on the way to it may be a file, and the deepest existing folder
    must be writable. The error names ``flag``; nothing is created while checking."""
    def check(text: str) -> str:
        path = os.path.abspath(text)
        probe = path
        while not os.path.exists(probe):
            probe = os.path.dirname(probe)
        if not os.path.isdir(probe):
            raise argparse.ArgumentTypeError(f"{flag} {text}: {probe} is a file, not a directory")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{flag} {text}: {probe} is not writable")
        return text
    return check


def seconds_arg(flag: str):
    """An argparse type: a finite number of seconds >= 0, else an error naming ``flag``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: expected seconds (a finite "
                                             f"number >= 0)")
        return value
    return parse


def count_arg(flag: str, least: int):
    """An argparse type for an integer flag of at least ``least``, the error naming ``flag``."""
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: not an integer") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{flag} {value}: must be at least {least}")
        return value
    return check


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``fact``."""
    parser = argparse.ArgumentParser(prog="fact", description="FACT: PyTorch module -> "
                                     "verified, tuned CUTLASS kernels")
    sub = parser.add_subparsers(dest="command", required=True)
    opt = sub.add_parser("optimize", help="export, discover, realize, compose, verify and "
                         "benchmark one problem file")
    opt.add_argument("problem", help="PROBLEM.py defining Model, get_inputs, get_init_inputs")
    opt.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default=None,
                     help="precision policy (default: from torch.get_float32_matmul_precision)")
    opt.add_argument("--model-dtype", choices=("float32", "bfloat16", "float16"), default=None,
                     help="convert the model and its floating inputs to this dtype first (a "
                     "bf16/fp16 model runs in its own dtype under every policy)")
    opt.add_argument("--out", default=None, type=directory_arg("--out"),
                     help="working directory (default: out/<problem name>)")
    opt.add_argument("--jobs", type=count_arg("--jobs", 1), default=None, help="parallel nvcc processes")
    opt.add_argument("--json", default=None, help="write the docs/07-bench-format.md result file here")
    opt.add_argument("--problem-name", default=None, help="name in the result row "
                     "(default: the file's stem)")
    opt.add_argument("--inductor", action="store_true",
                     help="also time torch.compile (default mode) under the same policy")
    opt.add_argument("--max-autotune", action="store_true",
                     help="also time torch.compile(mode='max-autotune') under the same policy "
                     "(its compile and autotuning take minutes on large models)")
    opt.add_argument("--remainder", choices=REMAINDERS, default=REMAINDERS[0],
                     help="what runs the nodes outside FACT's kernels: inductor (compiled "
                     "around the kernels, the default) or aten (op by op)")
    opt.add_argument("--ablation-budget", type=seconds_arg("--ablation-budget"), default=120.0,
                     metavar="SECONDS",
                     help="seconds the per-pattern ablation may take (0: only FACT+Inductor "
                     "against Inductor alone; default 120)")
    opt.add_argument("--no-measure", action="store_true",
                     help="use FACT+Inductor as built: no timing against Inductor alone, no "
                     "ablation")
    opt.add_argument("--trials", type=count_arg("--trials", 20), default=20,
                     help="timed trials per variant (>= 20)")
    opt.add_argument("--cache", default=None, type=directory_arg("--cache"),
                     help="kernel cache directory for factc realize")
    opt.add_argument("--tune-budget", type=count_arg("--tune-budget", 0), default=0,
                     help="CUTLASS candidates built per pattern, best-ranked first (0: all)")
    opt.add_argument("--no-registry", action="store_true",
                     help="tune afresh: neither replay nor record factc's tuning registry")
    opt.add_argument("--factc", default=None, help="factc executable (default: $FACT_FACTC, "
                     "build/factc, PATH)")
    opt.add_argument("-v", "--verbose", action="store_true", help="echo the engine's progress")
    opt.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="compile and tune progress bars (default: when stderr is a terminal)")
    rep = sub.add_parser("report", help="re-render an artifact's report (report.md) and "
                         "print it")
    rep.add_argument("artifact", help="the artifact directory (out/<problem>/artifact)")
    return parser


class _StderrHandler(logging.Handler):
    """Records as ``fact: message`` on whatever ``sys.stderr`` is when they come (not the
    stream of the moment the handler was made), through ``tqdm.write`` so that a progress
    bar on the terminal is redrawn below the line instead of being cut by it."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("fact: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # logging must never fail the run
            self.handleError(record)


def _log_to_stderr() -> None:
    """The ``fact`` logger's records on stderr (INFO and above), once per process, and
    :class:`fact.log.FactWarning` silenced (the logger says the same)."""
    import warnings
    from fact.log import FactWarning
    log = logging.getLogger("fact")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
    log.setLevel(logging.INFO)
    # What a FactWarning says is logged as well: on the terminal once is enough.
    warnings.simplefilter("ignore", FactWarning)


def _optimize(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from fact.bench import Float64ReferenceError
    from fact.export import ExportError
    from fact.factc import FactcError
    from fact.gpu import GpuRequired
    from fact.optimize import optimize
    from fact.precision import resolve_policy
    from fact.problem import MODEL_DTYPES, ProblemError, load_problem
    from fact.report import bench_document, machine_info, render_text, write_bench

    try:
        problem = load_problem(args.problem, args.problem_name)
        if args.model_dtype:
            problem.cast(MODEL_DTYPES[args.model_dtype])
        if torch.cuda.is_available():
            problem.to("cuda")
        policy = resolve_policy(args.precision)
        module = optimize(problem.model, problem.inputs, precision=policy,
                          out_dir=args.out or os.path.join("out", problem.name),
                          jobs=args.jobs, factc=args.factc, cache=args.cache,
                          tune_budget=args.tune_budget, registry=not args.no_registry,
                          inductor=args.inductor, max_autotune=args.max_autotune,
                          problem_name=problem.name, remainder=args.remainder,
                          measure=not args.no_measure, ablation_budget_s=args.ablation_budget,
                          trials=args.trials, verbose=args.verbose,
                          progress=args.progress)
    except GpuRequired as exc:
        print(str(exc))
        print(exc.details())
        return EXIT_NO_GPU
    except (ProblemError, ExportError, FactcError, Float64ReferenceError, ValueError) as exc:
        print(f"fact: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    report = module.report
    row = report["row"]
    print(render_text([row]), end="")
    fact = report["checks"]["fact"]
    if not row["verified"]:
        print(f"verification FAILED: {fact['reason']}")
    if "coverage" in row:
        print(f"coverage: {row['coverage']:.1%} of eager time is in FACT kernels; report: "
              f"{os.path.join(report['artifact'], 'report.md')}")
    if row.get("fallbacks"):
        print(f"note: {row['fallbacks']} kernel calls fell back to ATen:")
        for pid, reasons in module.fallback_reasons().items():
            for reason, calls in reasons.items():
                print(f"  {pid} ({calls}): {reason}")
    if args.json:
        command = "fact " + " ".join(shlex.quote(a) for a in argv)
        doc = bench_document(command, [row], machine_info(report["realized"]))
        write_bench(args.json, doc)
        print(f"wrote {args.json}")
    return EXIT_OK if row["verified"] else EXIT_NOT_VERIFIED


def _report(args: argparse.Namespace) -> int:
    from fact.report_cmd import rerender
    try:
        text = rerender(args.artifact)
    except (OSError, ValueError, KeyError) as exc:
        print(f"fact: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(text, end="")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fact`` console script; returns the exit status
    (:data:`EXIT_CODES`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    _log_to_stderr()
    if args.command == "optimize":
        return _optimize(args, argv)
    if args.command == "report":
        return _report(args)
    return EXIT_ERROR  # argparse rejects unknown commands before this


if __name__ == "__main__":
    sys.exit(main())
