"""The whole pipeline for one module: export, discover, realize, compose, verify, benchmark.

The order, and why:

1. export (Python): ``graph.json``; everything after reads files only.
2. ``factc discover``: ``plan.json`` (rules need the exported dtypes, shapes and strides).
3. ``factc realize``: ``realized.json``; without a GPU it stops after compiling, so the
   pipeline stops here too and says so (:class:`GpuRequired`).
4. ``factc compose``: ``artifact/`` (needs verified winners from step 3).
5. load the artifact as a module (Python runtime), with the model's parameters.
6. verify the whole module against float64 *before* timing anything (docs/07-bench-format.md).
7. time eager fp32, eager under the policy, FACT (and torch.compile) alternating.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Sequence

import torch

from fact.bench import float64_reference, time_variants
from fact.export import export_program, graph_from_program, write_graph
from fact.factc import find_factc, run_factc
from fact.precision import (Check, check_output, eager_precision, fact_precision,
                            resolve_policy, tolerance)
from fact.runtime import FactModule, load, save_params

__all__ = ["GpuRequired", "OptimizeOptions", "optimize", "verify", "benchmark"]


class GpuRequired(RuntimeError):
    """Realization ran without a GPU: kernels were compiled but not verified or tuned.

    Attributes:
        patterns: how many patterns discovery found.
        compiled: how many CUTLASS kernels are built (compiled now or found in the cache).
        cached: how many of those came from the cache.
        cache: the kernel cache directory.
    """

    def __init__(self, patterns: int, compiled: int, cache: str, cached: int = 0) -> None:
        self.patterns, self.compiled, self.cache, self.cached = patterns, compiled, cache, cached
        fresh = f"{compiled - cached} compiled now, {cached} from the cache" if cached else \
            f"compiled {compiled} kernel{'s' if compiled != 1 else ''}"
        super().__init__(f"verification and tuning need a GPU: discovered {patterns} "
                         f"pattern{'s' if patterns != 1 else ''}, {fresh} (cache: {cache}); "
                         f"stopping")


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
        problem_name: the name in the report row (default: the model's class name).
        trials: timed trials per variant (at least 20).
        save_params: write ``artifact/params.pt`` so ``fact.load(artifact)`` needs no model.
        verbose: echo the engine's progress.
    """

    out_dir: str = "out"
    jobs: int | None = None
    factc: str | None = None
    cache: str | None = None
    tune_budget: int = 0
    registry: bool = True
    inductor: bool = False
    problem_name: str | None = None
    trials: int = 20
    save_params: bool = True
    verbose: bool = False


def _device_type(inputs: Sequence[Any], model: torch.nn.Module) -> str:
    for x in list(inputs) + list(model.parameters()) + list(model.buffers()):
        if isinstance(x, torch.Tensor):
            return x.device.type
    return "cuda" if torch.cuda.is_available() else "cpu"


def _compiled_count(realized: dict, cached_only: bool = False) -> int:
    return sum(1 for p in realized.get("patterns", []) for c in p.get("candidates", [])
               if c.get("impl") == "cutlass" and c.get("status") in ("built", "ok")
               and (not cached_only or c.get("cached")))


def verify(fact_module: torch.nn.Module, model: torch.nn.Module, inputs: Sequence[Any],
           policy: str) -> dict[str, Check]:
    """Check the FACT module against float64 (and eager) under ``policy``.

    The FACT limit is the policy's (:func:`fact.precision.tolerance`), or twice eager's own
    error under the same policy when that is larger (what the vendor library reaches on the
    same data, docs/00-design.md §4).

    Returns:
        ``{"fact": ..., "eager": ..., "fact_vs_eager": ...}``; ``fact.ok`` is the verdict.
    """
    device_type = _device_type(inputs, model)
    ref = float64_reference(model, inputs)
    with torch.no_grad():
        with fact_precision(policy):
            out = fact_module(*inputs)
        with eager_precision(policy, device_type):
            eager_out = model(*inputs)
    eager = check_output(eager_out, ref, policy)
    flat = out if isinstance(out, (list, tuple)) else [out]
    limit = max(tolerance(policy, t.dtype) for t in flat if isinstance(t, torch.Tensor))
    if eager.rel_fro_err == eager.rel_fro_err and eager.rel_fro_err < float("inf"):
        limit = max(limit, 2.0 * eager.rel_fro_err)
    fact = check_output(out, ref, policy, limit=limit)
    vs_eager = check_output(out, eager_out, policy, limit=float("inf"))
    return {"fact": fact, "eager": eager, "fact_vs_eager": vs_eager}


def benchmark(fact_module: torch.nn.Module, model: torch.nn.Module, inputs: Sequence[Any],
              policy: str, trials: int = 20, inductor: bool = False) -> dict:
    """Time eager fp32, eager under ``policy``, FACT (and inductor), alternating.

    Returns:
        name -> :class:`fact.bench.Timing` for ``eager_fp32``, ``eager``, ``fact`` and,
        when asked, ``inductor``.
    """
    device_type = _device_type(inputs, model)
    variants = {"eager_fp32": lambda: model(*inputs), "eager": lambda: model(*inputs),
                "fact": lambda: fact_module(*inputs)}
    contexts = {"eager_fp32": lambda: eager_precision("fp32", device_type),
                "eager": lambda: eager_precision(policy, device_type),
                "fact": lambda: fact_precision(policy)}
    if inductor:
        compiled = torch.compile(model)
        variants["inductor"] = lambda: compiled(*inputs)
        contexts["inductor"] = lambda: eager_precision(policy, device_type)
    return time_variants(variants, trials=trials, contexts=contexts)


def _stage_paths(out_dir: str) -> dict[str, str]:
    return {k: os.path.join(out_dir, v) for k, v in
            (("graph", "graph.json"), ("plan", "plan.json"), ("realized", "realized.json"),
             ("artifact", "artifact"))}


def compile_artifact(model: torch.nn.Module, example_inputs: Sequence[Any], policy: str,
                     opts: OptimizeOptions) -> tuple[str, dict, float]:
    """Steps 1-4: export and run the engine. Returns (artifact dir, realized.json, seconds).

    Raises:
        fact.export.ExportError, fact.factc.FactcError, GpuRequired.
    """
    paths = _stage_paths(opts.out_dir)
    os.makedirs(opts.out_dir, exist_ok=True)
    factc = find_factc(opts.factc)
    t0 = time.perf_counter()
    ep = export_program(model, example_inputs)
    graph = graph_from_program(ep, name=type(model).__name__)
    write_graph(graph, paths["graph"])
    run_factc(factc, ["discover", paths["graph"], "-o", paths["plan"], "--policy", policy],
              opts.verbose)
    realize = ["realize", paths["plan"], "--policy", policy, "-o", paths["realized"]]
    if opts.jobs:
        realize += ["--jobs", str(opts.jobs)]
    if opts.cache:
        realize += ["--cache", opts.cache]
    if opts.tune_budget:
        realize += ["--tune-budget", str(opts.tune_budget)]
    if not opts.registry:
        realize.append("--no-registry")
    run_factc(factc, realize, opts.verbose)
    with open(paths["realized"], encoding="utf-8") as f:
        realized = json.load(f)
    if realized.get("gpu") is None:
        with open(paths["plan"], encoding="utf-8") as f:
            n_patterns = len(json.load(f).get("patterns", []))
        raise GpuRequired(n_patterns, _compiled_count(realized),
                          realized.get("cache") or opts.cache or "factc default",
                          cached=_compiled_count(realized, cached_only=True))
    run_factc(factc, ["compose", paths["plan"], paths["realized"], "--graph", paths["graph"],
                      "-o", paths["artifact"]], opts.verbose)
    if opts.save_params:
        save_params({**ep.state_dict, **ep.constants}, paths["artifact"])
    return paths["artifact"], realized, time.perf_counter() - t0


def _round(ms: float) -> float:
    """Milliseconds to 4 significant digits (more than CUDA events resolve)."""
    return float(f"{ms:.4g}")


def _kernels(module: FactModule) -> list[str]:
    names = []
    for p in (module.manifest or {}).get("patterns", []):
        names.append(p.get("kernel") or f"aten:{p['id']}")
    return names


def optimize(model: torch.nn.Module, example_inputs: Sequence[Any],
             precision: str | None = None, **opts: Any) -> FactModule:
    """Compile ``model`` for ``example_inputs`` and return the optimized module.

    The model and inputs stay where they are (move them to CUDA first for GPU work).

    Args:
        model: the module to optimize (not modified).
        example_inputs: forward inputs; also the benchmark's inputs.
        precision: ``fp32``, ``tf32`` or ``bf16``; ``None`` follows
            ``torch.get_float32_matmul_precision()``.
        **opts: fields of :class:`OptimizeOptions`.

    Returns:
        A :class:`fact.runtime.FactModule` whose ``.report`` is the docs/07-bench-format.md row (with
        ``verified``, timings and kernels) plus ``checks`` (the verification details).

    Raises:
        GpuRequired: no GPU; kernels were compiled but nothing was verified.
        fact.export.ExportError, fact.factc.FactcError: export or an engine step failed.
    """
    options = OptimizeOptions(**opts)
    policy = resolve_policy(precision)
    inputs = list(example_inputs)
    artifact, realized, compile_s = compile_artifact(model, inputs, policy, options)
    module = load(artifact, model)
    checks = verify(module, model, inputs, policy)
    timings = benchmark(module, model, inputs, policy, options.trials, options.inductor)
    row = {
        "problem": options.problem_name or type(model).__name__,
        "policy": policy,
        "fact_ms": _round(timings["fact"].median_ms),
        "fact_spread_ms": [_round(x) for x in timings["fact"].spread()],
        "baselines_ms": {k: _round(t.median_ms) for k, t in timings.items() if k != "fact"},
        "max_rel_err": checks["fact"].max_rel_err,
        "rel_fro_err": checks["fact"].rel_fro_err,
        # Eager's own error under the same policy (cuBLAS for a GEMM): the bar FACT's meets.
        "eager_max_rel_err": checks["eager"].max_rel_err,
        "verified": checks["fact"].ok,
        "compile_tune_s": round(compile_s, 2),
        "kernels": _kernels(module),
        "fallbacks": sum(module.fallback_counts().values()),
    }
    module.report = {"row": row, "realized": realized, "artifact": artifact,
                     "checks": {k: dataclasses.asdict(v) for k, v in checks.items()},
                     "timings": {k: dataclasses.asdict(t) for k, t in timings.items()}}
    return module
