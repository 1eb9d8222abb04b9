"""The whole pipeline for one module: export, discover, realize, compose, verify, benchmark.

The order, and why:

1. export (Python): ``graph.json``; everything after reads files only.
2. ``factc discover``: ``plan.json`` (rules need the exported dtypes, shapes and strides).
3. ``factc realize``: ``realized.json``; without a GPU it stops after compiling, so the
   pipeline stops here too and says so (:class:`GpuRequired`).
4. ``factc compose``: ``artifact/`` (needs verified winners from step 3).
5. load the artifact as a module (Python runtime), with the model's parameters.
5b. the ATen check (:mod:`fact.aten_check`): a kernel realize could only compare with a bound
   of its ATen path (attention) is timed against its own ATen nodes in the module, and runs
   them instead when they are faster; before verification, so the module verified is the
   module timed.
6. verify the whole module against float64 *before* timing anything (docs/07-bench-format.md),
   on the user's inputs and, when their reference cannot tell right from wrong (e.g. a ReLU
   that zeroes every element), on drawn inputs too (:func:`verify`).
7. time eager fp32, eager under the policy, FACT (and torch.compile) alternating.
8. append the module-level section (and charts) to ``artifact/report.md``
   (:func:`fact.module_report.write_module_report`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import time
import warnings
from typing import Any, Sequence

import torch

from fact.artifact import keep_sources, write_composition
from fact.aten_check import check_aten_paths
from fact.bench import time_variants
from fact.export import export_program, graph_from_program, write_graph
from fact.factc import find_factc, run_factc
from fact.gpu import NEEDS_GPU, GpuRequired, gpu_present
from fact.log import logger, warn_once
from fact.module_report import coverage, write_module_report
from fact.composition import aten_patterns, composed_module
from fact.module_verify import (DRAW_SCALES, DRAW_SEED, UNINFORMATIVE_FRACTION, draw_inputs,
                                inputs_device_type, uninformative_reason, verify)
from fact.plan_summary import NothingMatched, unmatched_text
from fact.precision import Check, eager_precision, fact_precision, model_dtype, resolve_policy
from fact.progress import Progress
from fact.remainder import check_remainder
from fact.runtime import FactModule, load, save_params

__all__ = ["GpuRequired", "OptimizeOptions", "optimize", "verify", "benchmark",
           "uninformative_reason", "draw_inputs", "UNINFORMATIVE_FRACTION", "DRAW_SCALES",
           "DRAW_SEED"]


@dataclasses.dataclass
class OptimizeOptions:
    """Options of :func:`optimize`.

    Attributes:
        out_dir: where graph.json, plan.json, realized.json and artifact/ go.
        jobs: parallel nvcc processes for realize (``None``: factc decides).
        factc: the engine executable (``None``: :func:`fact.factc.find_factc`).
        cache: kernel cache directory passed to realize (``None``: factc's default).
        tune_budget: CUTLASS candidates built per pattern, best-ranked first (0: all).
        registry: replay earlier tunings from factc's registry and record new ones.
        inductor: also time ``torch.compile`` (default mode) under the policy.
        max_autotune: also time ``torch.compile(mode="max-autotune")`` under the policy
            (baseline ``inductor_max_autotune``; its compile takes minutes on large models).
        problem_name: the name in the report row (default: the model's class name).
        trials: timed trials per variant (at least 20).
        save_params: write ``artifact/params.pt`` so ``fact.load(artifact)`` needs no model.
        verbose: log the engine's progress lines at INFO (else DEBUG) on the ``fact`` logger.
        device: where the optimized module runs. ``None`` keeps the model and inputs where
            they are; ``"cuda"`` (or ``"cuda:1"``) runs on copies moved there (the model
            itself is not modified). Without a GPU nothing is moved and no CUDA call is made:
            the steps that need no GPU run and :class:`fact.GpuRequired` says what is left.
        progress: compile and tune progress bars on stderr (:mod:`fact.progress`);
            ``None``: when stderr is a terminal.
        remainder: what runs the nodes outside FACT's kernels: ``"inductor"`` (the module
            compiled by Inductor, the kernels opaque custom ops) or ``"aten"`` (op by op;
            :mod:`fact.remainder`).
        measure: with ``"inductor"`` on a GPU, time FACT+Inductor against Inductor alone,
            ablate the kernel patterns and keep the faster (:mod:`fact.composition`).
        ablation_budget_s: seconds the ablation may take (``None``: no bound; 0: none).
    """

    out_dir: str = "out"
    jobs: int | None = None
    factc: str | None = None
    cache: str | None = None
    tune_budget: int = 0
    registry: bool = True
    inductor: bool = False
    max_autotune: bool = False
    problem_name: str | None = None
    trials: int = 20
    save_params: bool = True
    verbose: bool = False
    device: str | None = None
    progress: bool | None = None
    remainder: str = "inductor"
    measure: bool = True
    ablation_budget_s: float | None = 120.0

    def __post_init__(self) -> None:
        check_remainder(self.remainder)


def _compiled_count(realized: dict, cached_only: bool = False) -> int:
    # A symbolic pattern's candidates are its buckets' (docs/04, "Buckets"): each kernel
    # name once, since buckets share kernels.
    entries = [e for p in realized.get("patterns", []) for e in (p.get("buckets") or [p])]
    return len({c.get("kernel") for e in entries for c in e.get("candidates", [])
                if c.get("impl") == "cutlass" and c.get("status") in ("built", "ok")
                and (not cached_only or c.get("cached"))})


def benchmark(fact_module: torch.nn.Module, model: torch.nn.Module, inputs: Sequence[Any],
              policy: str, trials: int = 20, inductor: bool = False,
              max_autotune: bool = False, compile_s: dict[str, float] | None = None) -> dict:
    """Time eager fp32, eager under ``policy``, FACT (and torch.compile), alternating.

    Args:
        inductor / max_autotune: also time ``torch.compile`` in its default mode
            (``inductor``) / ``mode="max-autotune"`` (``inductor_max_autotune``).
        compile_s: filled with each torch.compile variant's first call, in seconds (its
            compile and autotuning).

    Returns:
        name -> :class:`fact.bench.Timing` for ``eager_fp32``, ``eager``, ``fact`` and the
        torch.compile variants asked for that compiled (one that fails is left out with a
        warning).
    """
    device_type = inputs_device_type(inputs, model)
    own = model_dtype(model, inputs)  # a bf16 model's baseline is its own eager
    variants = {"eager_fp32": lambda: model(*inputs), "eager": lambda: model(*inputs),
                "fact": lambda: fact_module(*inputs)}
    contexts = {"eager_fp32": lambda: eager_precision("fp32", device_type),
                "eager": lambda: eager_precision(policy, device_type, own),
                "fact": lambda: fact_precision(policy)}
    modes = {"inductor": None} if inductor else {}
    if max_autotune:
        modes["inductor_max_autotune"] = "max-autotune"
    for name, mode in modes.items():
        compiled = torch.compile(model, mode=mode)
        start = time.perf_counter()
        try:  # compiled (and checked to run) before timing, so a failure loses only this baseline
            with torch.no_grad(), eager_precision(policy, device_type, own):
                compiled(*inputs)
        except Exception as exc:  # Dynamo/Inductor errors have no common base class
            warnings.warn(f"fact: torch.compile ({mode or 'default'}) failed on this model, so "
                          f"its baseline is left out: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:300]}")
            continue
        if compile_s is not None:
            compile_s[name] = round(time.perf_counter() - start, 2)
        variants[name] = lambda c=compiled: c(*inputs)
        contexts[name] = lambda: eager_precision(policy, device_type, own)
    return time_variants(variants, trials=trials, contexts=contexts)


def choose_replay(module: FactModule, inputs: Sequence[Any], policy: str,
                  trials: int = 20) -> dict | None:
    """Time the module with CUDA-graph replay and with plain calls, alternating, and keep the
    faster (``module.replay.mode`` is set to ``False`` when plain calls win). Replay saves the
    launches but copies the inputs into and the outputs out of the captured graph's buffers,
    which costs more than it saves on a GPU-bound block (measured on the H200: the minGPT
    block in bf16, docs/perf-notes.md v11).

    Returns:
        ``None`` when replay is not possible here (no CUDA, symbolic sizes, a host sync: the
        module's :attr:`replay` says why), else ``{"replay_ms", "plain_ms", "kept"}``.
    """
    replay = getattr(module, "replay", None)
    if replay is None or not replay.enabled or not torch.cuda.is_available() \
            or inputs_device_type(inputs, module) != "cuda":
        return None

    @contextlib.contextmanager
    def mode(value: bool | None):
        previous = replay.mode
        replay.mode = value
        try:
            with fact_precision(policy):
                yield
        finally:
            replay.mode = previous

    t = time_variants({"replay": lambda: module(*inputs), "plain": lambda: module(*inputs)},
                      trials=trials, contexts={"replay": lambda: mode(None),
                                               "plain": lambda: mode(False)})
    kept = t["replay"].median_ms < t["plain"].median_ms and replay.enabled
    if not kept:
        replay.mode = False
        replay.reset()
    return {"replay_ms": _round(t["replay"].median_ms), "plain_ms": _round(t["plain"].median_ms),
            "kept": kept}


def _stage_paths(out_dir: str) -> dict[str, str]:
    return {k: os.path.join(out_dir, v) for k, v in
            (("graph", "graph.json"), ("plan", "plan.json"), ("realized", "realized.json"),
             ("artifact", "artifact"))}


def compile_artifact(model: torch.nn.Module, example_inputs: Sequence[Any], policy: str,
                     opts: OptimizeOptions, program: torch.export.ExportedProgram | None = None,
                     graph: dict | None = None, require_patterns: bool = False
                     ) -> tuple[str, dict, float]:
    """Steps 1-4: export and run the engine. Returns (artifact dir, realized.json, seconds).

    The artifact also gets the plan, realized.json and ``environment.json``
    (:func:`fact.artifact.keep_sources`) and, with ``opts.save_params``, ``params.pt``.
    ``program`` and ``graph``, when given, are the model's exported program and its FACT
    graph (the backend exports before it knows whether it has compiled the graph before).

    Raises:
        fact.export.ExportError, fact.factc.FactcError, GpuRequired.
        fact.plan_summary.NothingMatched: ``require_patterns`` and discovery found none
            (nothing is realized then).
    """
    paths = _stage_paths(opts.out_dir)
    os.makedirs(opts.out_dir, exist_ok=True)
    factc = find_factc(opts.factc)
    t0 = time.perf_counter()
    name = opts.problem_name or type(model).__name__
    if program is None:
        logger.info("%s: exporting the graph", name)
        program = export_program(model, example_inputs)
    ep = program
    if graph is None:
        graph = graph_from_program(ep, name=type(model).__name__)
    write_graph(graph, paths["graph"])
    count = len(graph["nodes"])
    logger.info("%s: discovering patterns (%d node%s)", name, count, "" if count == 1 else "s")
    run_factc(factc, ["discover", paths["graph"], "-o", paths["plan"], "--policy", policy],
              opts.verbose)
    with open(paths["plan"], encoding="utf-8") as f:
        plan = json.load(f)
    n_patterns = len(plan.get("patterns", []))
    if n_patterns == 0 and require_patterns:
        raise NothingMatched(plan)
    if n_patterns == 0:
        logger.warning("%s: nothing matched: %s", name, unmatched_text(plan))
    realize = ["realize", paths["plan"], "--policy", policy, "-o", paths["realized"]]
    if opts.jobs:
        realize += ["--jobs", str(opts.jobs)]
    if opts.cache:
        realize += ["--cache", opts.cache]
    if opts.tune_budget:
        realize += ["--tune-budget", str(opts.tune_budget)]
    if not opts.registry:
        realize.append("--no-registry")
    logger.info("%s: realizing %d pattern%s (budget %s)", name, n_patterns,
                "" if n_patterns == 1 else "s", opts.tune_budget or "all candidates")
    with Progress(opts.progress, label=name) as bars:
        run_factc(factc, realize, opts.verbose, on_line=bars.line)
    with open(paths["realized"], encoding="utf-8") as f:
        realized = json.load(f)
    if realized.get("gpu") is None:
        raise GpuRequired(n_patterns, _compiled_count(realized),
                          realized.get("cache") or opts.cache or "factc default",
                          cached=_compiled_count(realized, cached_only=True),
                          out_dir=opts.out_dir, plan=plan)
    logger.info("%s: composing the artifact", name)
    run_factc(factc, ["compose", paths["plan"], paths["realized"], "--graph", paths["graph"],
                      "-o", paths["artifact"]], opts.verbose)
    keep_sources(paths["artifact"], paths["plan"], paths["realized"], realized, policy,
                 opts.tune_budget)
    if opts.save_params:
        save_params({**ep.state_dict, **ep.constants}, paths["artifact"])
    return paths["artifact"], realized, time.perf_counter() - t0


def _on_device(model: torch.nn.Module, inputs: list[Any], device: str | None
               ) -> tuple[torch.nn.Module, list[Any], bool]:
    """(model, inputs, stop): copies moved to ``device`` when it is a CUDA device and a GPU
    is here; without one, the originals and ``stop`` = True (nothing is moved, no CUDA call
    is made: the pipeline stops with GpuRequired after compiling). Without a GPU it says so
    first, whatever ``device`` is."""
    present = gpu_present()
    if not present:  # a warning too: the logger may have no handler, and compiling is long
        warn_once("optimize:no-gpu", f"no GPU here (torch.cuda.is_available() is False): "
                  f"{NEEDS_GPU}", always_log=True)
    if device is None:
        return model, inputs, False
    dev = torch.device(device)
    if dev.type == "cuda" and not present:
        logger.info("not moving the model to %s: exporting, discovering and compiling only",
                    dev)
        return model, inputs, True
    moved = copy.deepcopy(model).to(dev)
    return moved, [x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs], False


def _round(ms: float) -> float:
    """Milliseconds to 4 significant digits (more than CUDA events resolve)."""
    return float(f"{ms:.4g}")


def _kernels(module: FactModule) -> list[str]:
    names = []
    for p in (module.manifest or {}).get("patterns", []):
        names.append(p.get("kernel") or f"aten:{p['id']}")
    return names


#: What ``fact report ARTIFACT`` re-renders the module section from (the row, the checks
#: and the timings of the run that wrote it).
RESULT_FILE = "result.json"


def _write_result(artifact: str, row: dict, checks: dict, timings: dict) -> None:
    doc = {"format": "fact.result", "version": 1, "row": row,
           "checks": {k: (dataclasses.asdict(v) if isinstance(v, Check) else v)
                      for k, v in checks.items()},
           "timings": {k: dataclasses.asdict(t) for k, t in timings.items()}}
    with open(os.path.join(artifact, RESULT_FILE), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")


def optimize(model: torch.nn.Module, example_inputs: Sequence[Any],
             precision: str | None = None, **opts: Any) -> FactModule:
    """Compile ``model`` for ``example_inputs`` and return the optimized module.

    The model and inputs stay where they are, unless ``device`` is given (then copies run
    there: ``fact.optimize(model, [x], device="cuda")``). What each step does is logged on
    the ``fact`` logger; compiling and tuning show progress bars on a terminal.

    Args:
        model: the module to optimize (not modified).
        example_inputs: forward inputs; also the benchmark's inputs.
        precision: ``fp32``, ``tf32`` or ``bf16``; ``None`` follows
            ``torch.get_float32_matmul_precision()``.
        **opts: fields of :class:`OptimizeOptions`.

    Returns:
        A :class:`fact.runtime.FactModule` whose ``.report`` is the docs/07-bench-format.md row (with
        ``verified``, timings, kernels and ``coverage``) plus ``checks`` (the verification
        details). ``artifact/report.md`` gains a ``## Module`` section (and, with matplotlib,
        ``report_times.png`` and ``report_patterns.png``).

    Raises:
        fact.GpuRequired: no GPU; kernels were compiled but nothing was verified (the
            message says what was done and what needs a GPU, and, when nothing matched,
            which ops stay ATen and why).
        fact.export.ExportError, fact.factc.FactcError: export or an engine step failed.
    """
    options = OptimizeOptions(**opts)
    policy = resolve_policy(precision)
    model, inputs, no_gpu = _on_device(model, list(example_inputs), options.device)
    artifact, realized, compile_s = compile_artifact(model, inputs, policy, options)
    if no_gpu:  # realize found a GPU after all (e.g. factc sees one torch does not)
        raise GpuRequired(len(realized.get("patterns", [])), _compiled_count(realized),
                          realized.get("cache") or "factc default", out_dir=options.out_dir)
    module = load(artifact, model)
    module.write_source(artifact)  # the generated module's readable source, module.py
    # Kernels realize could only compare with a bound of their ATen path are timed against
    # it here, in the module; a slower one is disabled before anything is verified or timed.
    aten_checks = check_aten_paths(module, inputs, policy, options.trials)
    for pat in (module.manifest or {}).get("patterns", []):  # the report's "before" times
        if pat.get("id") in aten_checks:
            pat["aten_ms"] = aten_checks[pat["id"]]["aten_ms"]
    module, composition = composed_module(module, inputs, policy, options.remainder,
                                          options.measure, options.ablation_budget_s,
                                          options.trials)
    cuda_graph = choose_replay(module, inputs, policy, options.trials)
    checks = verify(module, model, inputs, policy)
    baseline_compile_s: dict[str, float] = {}
    timings = benchmark(module, model, inputs, policy, options.trials, options.inductor,
                        options.max_autotune, baseline_compile_s)
    row = {
        "problem": options.problem_name or type(model).__name__,
        "policy": policy,
        # The model's own floating dtype (bf16/fp16 models run in it; their eager is theirs).
        "model_dtype": str(model_dtype(model, inputs)).removeprefix("torch."),
        "fact_ms": _round(timings["fact"].median_ms),
        "fact_spread_ms": [_round(x) for x in timings["fact"].spread()],
        "baselines_ms": {k: _round(t.median_ms) for k, t in timings.items() if k != "fact"},
        "max_rel_err": checks["fact"].max_rel_err,
        "rel_fro_err": checks["fact"].rel_fro_err,
        # Eager's own error under the same policy (cuBLAS for a GEMM): the bar FACT's meets.
        "eager_max_rel_err": checks["eager"].max_rel_err,
        "verified": checks["fact"].ok,
        # The inputs whose float64 reference could tell right from wrong, FACT checked on.
        "verified_on": [d["name"] for d in checks["draws"]
                        if d["informative"] and "fact" in d],
        "compile_tune_s": round(compile_s, 2),
        # torch.compile's own compile (+ autotune) seconds, per variant timed.
        "baseline_compile_s": baseline_compile_s,
        "kernels": _kernels(module),
        "fallbacks": sum(module.fallback_counts().values()),
        # Why: pattern id -> {reason: calls} (verification's and the timed calls together).
        "fallback_reasons": module.fallback_reasons(),
        # Cutlass patterns whose kernel never runs in this module, and why (e.g. the buffer
        # a causal mask was proven from is no longer lower-triangular).
        "aten_patterns": aten_patterns(module),
        # Kernel vs its own ATen nodes, timed in the module (fact.aten_check), per pattern.
        "aten_checks": {pid: {k: (_round(v) if isinstance(v, float) else
                                  [_round(x) for x in v] if isinstance(v, list) else v)
                              for k, v in r.items()} for pid, r in aten_checks.items()},
        # CUDA-graph replay against plain calls, timed in the module; the faster is kept.
        "cuda_graph": cuda_graph,
        # What ran the nodes outside the kernels ("inductor", or "aten" also when Inductor
        # failed: remainder_failed says why), and the measured composition (fact.composition).
        "remainder": "inductor" if module.remainder.inductor else "aten",
        "remainder_failed": module.remainder.failed,
        "composition": composition.to_json() if composition is not None else None,
        # Share of eager time now in FACT kernels, in [0, 1] (fact.module_report.coverage).
        "coverage": round(coverage(module.manifest or {}, timings["eager"].median_ms,
                                   aten=aten_patterns(module)), 4),
    }
    try:
        write_module_report(artifact, row, checks, timings, module.manifest or {})
        _write_result(artifact, row, checks, timings)
        write_composition(artifact, module, row["composition"])  # what fact.load applies
    except OSError as exc:  # the results above stand; only the report file is missing
        warnings.warn(f"fact: could not write the module report in {artifact}: {exc}")
    module.report = {"row": row, "realized": realized, "artifact": artifact,
                     "checks": {k: (dataclasses.asdict(v) if isinstance(v, Check) else v)
                                for k, v in checks.items()},
                     "timings": {k: dataclasses.asdict(t) for k, t in timings.items()}}
    return module
