"""Benchmark a suite of example problems with ``fact optimize`` and merge the results.

Suites: ``skeleton`` (the four examples of examples/, each under its own policy),
``gemm`` (examples/kernelbench_l1/: the GEMM problems of KernelBench level 1, and
examples/gemm_shapes/m8_linear.py, M = 8; each at ``tf32`` and at ``fp32``), ``epilogue`` (examples/epilogue/: a GEMM followed by an
elementwise tail that FACT fuses into the kernel's epilogue, at ``tf32``) and ``attention``
(examples/attention/: minGPT's causal self-attention, KernelBench L3-43, at ``tf32`` and
``bf16``; an SDPA call and grouped-query attention at ``tf32``, and the grouped-query layer in
bfloat16 at ``bf16``) and ``blocks`` (examples/blocks/: the minGPT block, the Llama-3-8B
decoder layer and the BERT-base encoder layer; a run may convert the model to bf16 first). The
epilogue, attention and blocks suites are always timed side by side with ``torch.compile``
(``--inductor`` is implied).
Each (problem, policy)
runs in its own process (``python -m fact.cli optimize ...``), so one problem's memory and
compiled state cannot affect the next. The rows are merged into one docs/07-bench-format.md file (default
``bench/results/<suite>-h200.json``) with its markdown table beside it (``.md``).

Usage::

    python bench/suite.py SUITE [--out FILE.json] [--precision POLICY] [--jobs N]
                          [--tune-budget N] [--inductor] [--only NAME ...]
    python bench/suite.py SUITE --list      # the suite's runs, one NAME:POLICY[:DTYPE] a line

Exit status: 0 when every run finished and verified, 1 otherwise.
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
from realize_plans import realization_summary  # noqa: E402  (bench/, the script's folder)

# Suite -> [(example file relative to examples/, policy)]. The skeleton's fp32 models run
# at tf32 (what torch's "high" gives them) and its bf16 model at bf16 (its own dtype,
# docs/00-design.md §4); the KernelBench GEMMs at both fp32 policies.
_L1_GEMMS = ["L1-1_square", "L1-2_standard", "L1-3_batched", "L1-4_matvec", "L1-6_large_k",
             "L1-7_small_k", "L1-8_irregular", "L1-9_tall_skinny", "L1-10_3d_tensor_matrix",
             "L1-16_transposed_a", "L1-17_transposed_b", "L1-18_transposed_both"]
# GEMM + elementwise tail (fused epilogue): nn.Linear(8192, 8192) on 1024 rows with tails
# (a)-(i), a wide Linear(32768, 32768) on 128 rows, and minGPT's MLP.
_EPILOGUE = ["a_sub_mul_relu", "b_mul_leaky_relu", "c_relu_div", "d_add_bias_relu",
             "e_div_gelu", "f_mul_hardtanh_gelu", "g_swish_div_clamp_tanh_clamp",
             "h_add_swish_tanh_gelu_hardtanh", "i_sigmoid_times_2_plus_x", "wide_swish_mul",
             "mingpt_mlp"]
# Fused attention: minGPT's block (KernelBench L3-43: the QKV projection, causal attention
# from a tril buffer, the head merge, the output projection) under the three policies,
# a bare SDPA call, grouped-query attention, and the grouped-query layer in bfloat16 (its
# own dtype under every policy; the sm90 attention kernel's row).
_ATTENTION = [("L3-43_mingpt_attention", "tf32"), ("L3-43_mingpt_attention", "bf16"),
              ("L3-43_mingpt_attention", "fp32"), ("sdpa_attention", "tf32"),
              ("gqa_attention", "tf32"), ("gqa_attention_bf16", "bf16")]
# Whole blocks (examples/blocks/): the minGPT block (KernelBench L3-44's shapes) under the three
# policies and as a bf16 model, the Llama-3-8B decoder layer at tf32 and bf16 (fp32 model and
# model in bf16), and the BERT-base encoder layer at tf32. A third element converts the
# model first (``fact optimize --model-dtype``): such a row's eager is the model's own.
_BLOCKS = [("L3-44_minigpt_block", "tf32"), ("L3-44_minigpt_block", "bf16"),
           ("L3-44_minigpt_block", "bf16", "bfloat16"), ("L3-44_minigpt_block", "fp32"),
           ("llama3_8b_block", "tf32"), ("llama3_8b_block", "bf16"),
           ("llama3_8b_block", "bf16", "bfloat16"), ("bert_encoder_layer", "tf32")]
SUITES: dict[str, list[tuple[str, ...]]] = {
    "skeleton": [("square_4096", "tf32"), ("batched_128x512x1024x2048", "tf32"),
                 ("large_k_256x256x524288", "tf32"), ("linear_bf16_8192x4096x4096", "bf16")],
    "gemm": [(f"kernelbench_l1/{n}", pol) for pol in ("tf32", "fp32") for n in _L1_GEMMS]
            + [("gemm_shapes/m8_linear", pol) for pol in ("tf32", "fp32")],
    "epilogue": [(f"epilogue/{n}", "tf32") for n in _EPILOGUE],
    "attention": [(f"attention/{n}", pol) for n, pol in _ATTENTION],
    "blocks": [(f"blocks/{r[0]}", *r[1:]) for r in _BLOCKS],
}
# Suites whose claim is against torch.compile (default mode): they always time it.
INDUCTOR_SUITES = {"epilogue", "attention", "blocks"}


def _name(example: str) -> str:
    return os.path.basename(example)


def _label(run: tuple[str, ...]) -> str:
    """NAME:POLICY, or NAME:POLICY:DTYPE for a run that converts the model first."""
    return ":".join([_name(run[0]), *run[1:]])


def _run_one(run: tuple[str, ...], args: argparse.Namespace,
             json_path: str) -> tuple[int, str]:
    example, policy = run[0], run[1]
    cmd = [sys.executable, "-m", "fact.cli", "optimize",
           os.path.join(REPO, "examples", f"{example}.py"),
           "--precision", policy, "--out", os.path.join(args.work, _work_name(run)),
           "--json", json_path]
    if len(run) > 2:
        cmd += ["--model-dtype", run[2]]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    if args.tune_budget:
        cmd += ["--tune-budget", str(args.tune_budget)]
    if args.inductor:
        cmd.append("--inductor")
    if args.max_autotune:
        cmd.append("--max-autotune")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(REPO, "python"),
                                                      env.get("PYTHONPATH")]))
    print(f"== {_label(run)}: {shlex.join(cmd)}", flush=True)
    try:
        proc = subprocess.run(cmd, env=env, cwd=REPO, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"== {_label(run)}: no result within {args.timeout} s (killed)", flush=True)
        return 124, shlex.join(cmd)
    return proc.returncode, shlex.join(cmd)


def _work_name(run: tuple[str, ...]) -> str:
    """The run's folder under --work (and its result file's stem): NAME-POLICY[-DTYPE]."""
    return "-".join([_name(run[0]), *run[1:]])


def _realization(work_dir: str) -> dict:
    """What ``factc realize`` spent on a run (its realized.json): kernels compiled now, wall
    seconds of the build step and of tuning, and how many patterns the registry answered."""
    path = os.path.join(work_dir, "realized.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        r = json.load(f)
    tune_s = sum(p.get("tune_s", 0.0) for p in r.get("patterns", []))
    return {"realize_s": round(r.get("build_wall_s", 0.0) + tune_s, 2),
            **realization_summary(r)}


def main(argv: list[str] | None = None) -> int:
    """Run the problems, merge their rows, write JSON and markdown; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("--out", default=None,
                        help="result file (default bench/results/<suite>-h200.json)")
    parser.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default=None,
                        help="run only the suite's rows under this policy")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--tune-budget", type=int, default=0,
                        help="CUTLASS kernels built per pattern (0: the whole space)")
    parser.add_argument("--inductor", action="store_true",
                        help="also time torch.compile (implied for: "
                        + ", ".join(sorted(INDUCTOR_SUITES)) + ")")
    parser.add_argument("--max-autotune", action="store_true",
                        help="also time torch.compile(mode='max-autotune')")
    parser.add_argument("--work", default=os.path.join(REPO, "out", "suite"),
                        help="working directories of the runs")
    parser.add_argument("--timeout", type=int, default=420,
                        help="seconds one problem may take (compile, tune, verify, time)")
    parser.add_argument("--only", nargs="+", default=None,
                        help="problem names (or NAME:POLICY[:DTYPE] labels) to run")
    parser.add_argument("--list", action="store_true",
                        help="print the runs (NAME:POLICY, one a line) and exit")
    args = parser.parse_args(argv)
    args.inductor = args.inductor or args.suite in INDUCTOR_SUITES
    runs = [run for run in SUITES[args.suite]
            if (args.only is None or _name(run[0]) in args.only or _label(run) in args.only)
            and (args.precision is None or run[1] == args.precision)]
    if not runs:
        parser.error("no run of the suite matches --only/--precision")
    if args.list:
        print("\n".join(_label(run) for run in runs))
        return 0
    out = args.out or os.path.join(REPO, "bench", "results", f"{args.suite}-h200.json")

    rows: list[dict] = []
    machine: dict | None = None
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fact-suite-") as tmp:
        for run in runs:
            name = _label(run)
            json_path = os.path.join(tmp, f"{_work_name(run)}.json")
            rc, _ = _run_one(run, args, json_path)
            if not os.path.isfile(json_path):
                failed.append(f"{name} (exit {rc}, no result)")
                continue
            with open(json_path, encoding="utf-8") as f:
                doc = json.load(f)
            machine = machine or doc["machine"]
            realization = _realization(os.path.join(args.work, _work_name(run)))
            for row in doc["rows"]:
                row["realization"] = realization
            rows.extend(doc["rows"])
            if rc != 0:
                failed.append(f"{name} (exit {rc})")
    if not rows:
        print("no results: " + "; ".join(failed), file=sys.stderr)
        return 1
    command = "python bench/suite.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    write_bench(out, bench_document(command.strip(), rows, machine or {}))
    print(f"wrote {out} and {os.path.splitext(out)[0]}.md")
    if failed:
        print("failed: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
