"""``torch.compile(model, backend="fact", options={...})``: FACT as a Dynamo backend.

Registered through the ``torch_dynamo_backends`` entry point (pyproject.toml), so
``torch._dynamo.list_backends()`` lists ``fact`` once the package is installed. Dynamo
calls :func:`fact_backend` once per subgraph it captures (a graph break makes two) with
the ``torch.fx.GraphModule`` and its example inputs: the (real) tensors of the first call,
the module's parameters and buffers among them (Dynamo passes them as graph inputs; their
placeholders' sources name them ``L['self']._modules['fc']._parameters['weight']``). A
caller that hands fake tensors instead gets a callable that compiles on its first call.

Per subgraph, in this order (docs/09-backend.md):

Every subgraph FACT refuses (the reasons below) is compiled by Inductor alone
(:func:`inductor_alone`, as ``torch.compile``'s default backend would), with its reason said
once; with ``remainder="aten"`` it runs as Dynamo gave it instead.

1. **Scope.** Forward/inference on CUDA tensors. A graph whose tensors are not all on a
   CUDA device, or that needs autograd (grad mode on and a tensor that requires grad), is
   refused, with one warning per reason per process.
2. **Export.** The parameters and buffers are lifted back into a module around the graph
   (:class:`_Lifted`), which ``torch.export`` re-traces on the user inputs, so the FACT
   graph has them as parameters and buffers (a causal-mask buffer keeps its ``"value":
   "tril"``, docs/02) exactly as :func:`fact.export.export` of the whole model would. A
   dim Dynamo made symbolic (automatic dynamic, ``mark_dynamic``) is exported as a
   ``torch.export.Dim`` and stays a symbol of the FACT graph (docs/09, "Dynamic shapes").
3. **Reuse.** The graph's key hashes its JSON, the policy and the options that change the
   result; ``<out_dir>/<key>/`` holds its graph, plan, realized.json and artifact. An
   artifact already there is loaded (:func:`fact.artifact.load_artifact`: checked against
   this GPU) without running ``factc``: a recompile or a new process costs a load.
4. **Discover → realize → compose** (:func:`fact.optimize.compile_artifact`), with the tuning
   registry and the kernel cache, so a subgraph this GPU has seen tunes nothing and
   compiles nothing. A subgraph with no pattern is refused (logged with the ops left to
   ATen and why, no warning). In-place ops on intermediates were functionalized at export
   (:func:`fact.export.functionalized`); a graph that writes its inputs or buffers is
   refused before anything runs.
5. **Check.** As :func:`fact.optimize` does: an attention kernel is timed against its own
   ATen nodes and disabled when slower (:mod:`fact.aten_check`), then the module is
   verified against float64 on the example inputs (:func:`fact.optimize.verify`); a module
   that fails is refused, with a warning.
6. **Compose with Inductor** (``remainder="inductor"``): the module's remainder is compiled
   by Inductor around its kernels (:mod:`fact.remainder`), and with ``measure`` the
   composition is measured (:mod:`fact.composition`: FACT+Inductor against Inductor alone,
   the kernel groups ablated); the decision is kept in ``<key>/composition.json``.

The result is a callable taking Dynamo's inputs (user inputs and the current parameters)
and returning the graph's outputs as Dynamo expects them (a tuple).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx

from fact.log import logger, warn_once

__all__ = ["fact_backend", "BackendOptions", "KERNEL_DEVICE_TYPES", "scope_problem"]

#: Device types whose tensors FACT kernels take. (The CPU tests add ``"cpu"`` to run the
#: pipeline with a stand-in engine.)
KERNEL_DEVICE_TYPES: tuple[str, ...] = ("cuda",)


@dataclasses.dataclass
class BackendOptions:
    """``options`` of ``torch.compile(..., backend="fact", options={...})``.

    Attributes:
        precision: ``fp32``, ``tf32`` or ``bf16``; ``None`` follows
            ``torch.get_float32_matmul_precision()`` (docs/01-quickstart.md).
        tune_budget: CUTLASS candidates built per pattern, best-ranked first (0: all).
        jobs: parallel nvcc processes (``None``: factc decides).
        cache: the kernel cache (``None``: factc's default, :func:`fact.artifact.cache_root`).
        registry: replay and record tunings in factc's registry.
        out_dir: where each subgraph's folder goes (default ``<cache>/backend``).
        factc: the engine (``None``: :func:`fact.factc.find_factc`).
        progress: compile and tune progress bars; ``None``: when stderr is a terminal.
        verbose: log the engine's lines at INFO.
        verify: check each loaded subgraph against float64 before using it.
        buckets: symbol (Dynamo's name, ``"s77"``) -> the bucket upper bounds realization
            tunes for it (docs/04, "Buckets"); others get powers of two.
        bucket_bound: the largest bucket of the powers of two (default 4096).
        remainder: ``"inductor"``: FACT's module is compiled by Inductor (its kernels opaque
            custom ops), and a subgraph FACT leaves is compiled by Inductor alone;
            ``"aten"``: the module runs op by op and a subgraph FACT leaves runs as Dynamo
            gave it (:mod:`fact.remainder`).
        measure: with ``"inductor"``, time FACT+Inductor against Inductor alone on the
            example inputs, ablate the kernel patterns, and keep the faster
            (:mod:`fact.composition`); off, FACT+Inductor is used unmeasured.
        ablation_budget_s: seconds the ablation may take (``None``: no bound; 0: only
            FACT+Inductor against Inductor alone).
    """

    precision: str | None = None
    tune_budget: int = 0
    jobs: int | None = None
    cache: str | None = None
    registry: bool = True
    out_dir: str | None = None
    factc: str | None = None
    progress: bool | None = None
    verbose: bool = False
    verify: bool = True
    buckets: dict[str, list[int]] | None = None
    bucket_bound: int | None = None
    remainder: str = "inductor"
    measure: bool = True
    ablation_budget_s: float | None = 120.0

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> "BackendOptions":
        """Raises ValueError: an option this backend does not have (the message lists
        them), or a ``remainder`` that is not one of :data:`fact.remainder.REMAINDERS`."""
        from fact.remainder import check_remainder
        options = dict(options or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"fact backend: unknown option{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
        opts = cls(**options)
        try:
            check_remainder(opts.remainder)
        except ValueError as exc:
            raise ValueError(f"fact backend: {exc}") from None
        if not isinstance(opts.measure, bool):
            raise ValueError(f"fact backend: measure {opts.measure!r}: expected True or False")
        budget = opts.ablation_budget_s
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))
                                   or not math.isfinite(budget) or budget < 0):
            raise ValueError(f"fact backend: ablation_budget_s {budget!r}: expected seconds "
                             f"(a finite number >= 0) or None")
        return opts


# ------------------------------------------------------------------ the graph's inputs

def _source_name(node: torch.fx.Node) -> str:
    src = getattr(node, "_dynamo_source", None)
    if src is None:
        src = getattr(node.meta.get("grapharg"), "source", None)
    if src is None:
        return ""
    name = src.name
    return name() if callable(name) else str(name)


_KEY = re.compile(r"\['([^']*)'\]")


def _state_name(source: str) -> str | None:
    """``L['self']._modules['fc']._parameters['weight']`` -> ``fc_weight``; None for a
    source that is not a parameter or buffer."""
    if "._parameters[" not in source and "._buffers[" not in source:
        return None
    parts = _KEY.findall(source)[1:] or ["t"]
    return re.sub(r"\W", "_", "_".join(parts))


def _symbol_of(value: Any) -> str | None:
    """The symbol a SymInt is (``"s77"``), or None for anything else."""
    if isinstance(value, torch.SymInt) and value.node.expr.is_Symbol:
        return str(value.node.expr)
    return None


class _Lifted(torch.nn.Module):
    """Dynamo's graph with its parameter and buffer inputs held as this module's own
    parameters and buffers (the very tensors, shared), so that ``torch.export`` of it lifts
    them as the model's export would. ``forward`` takes the user tensors only: a size input
    of a graph with dynamic shapes (a SymInt placeholder) is read from the user tensor dim
    Dynamo made symbolic with the same symbol.

    Attributes:
        dynamic: per user tensor, ``{dim: symbol}`` of its symbolic dims (Dynamo's
            automatic dynamic or ``torch._dynamo.mark_dynamic``).

    Raises:
        ValueError: a size input no user tensor dim gives.
    """

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
        super().__init__()
        self.gm = gm
        self.slots: list[str | None] = []  # per placeholder: its attribute, or None (user)
        self.sizes: dict[int, tuple[int, int]] = {}  # placeholder -> (user tensor, dim)
        self.dynamic: list[dict[int, str]] = []
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        where: dict[str, tuple[int, int]] = {}  # symbol -> (user tensor, dim)
        for node, value in zip(placeholders, example_inputs):
            fake = node.meta.get("example_value")
            if isinstance(value, torch.Tensor) and _state_name(_source_name(node)) is None:
                dims = {d: _symbol_of(s) for d, s in enumerate(getattr(fake, "shape", ()))
                        if _symbol_of(s)}
                for d, sym in dims.items():
                    where.setdefault(sym, (len(self.dynamic), d))
                self.dynamic.append(dims)
        for i, (node, value) in enumerate(zip(placeholders, example_inputs)):
            if not isinstance(value, torch.Tensor):
                sym = _symbol_of(node.meta.get("example_value"))
                if sym not in where:
                    raise ValueError(f"size input {node.name} ({sym}) is the size of no input "
                                     f"tensor dim")
                self.sizes[i] = where[sym]
                self.slots.append("")
                continue
            name = _state_name(_source_name(node)) if isinstance(value, torch.Tensor) else None
            if name is not None:
                base, i = name, 1
                while hasattr(self, name):
                    name, i = f"{base}_{i}", i + 1
                if isinstance(value, torch.nn.Parameter):
                    self.register_parameter(name, value)
                else:
                    self.register_buffer(name, value)
            self.slots.append(name)

    def user_inputs(self, args: Sequence[Any]) -> list[Any]:
        """Dynamo's arguments (one per placeholder) -> the user tensors among them."""
        return [a for a, s in zip(args, self.slots) if s is None]

    def dynamic_shapes(self) -> tuple[tuple[dict[int, Any], ...]] | None:
        """``torch.export``'s ``dynamic_shapes`` for the user tensors: a ``Dim`` named after
        each symbol (min 2, as Dynamo assumes), None when no dim is symbolic."""
        if not any(self.dynamic):
            return None
        dims: dict[str, Any] = {}
        # forward(*user): one entry, the tuple of the user tensors' specs.
        return (tuple({d: dims.setdefault(sym, torch.export.Dim(sym, min=2))
                       for d, sym in spec.items()} for spec in self.dynamic),)

    def forward(self, *user: Any) -> Any:
        it = iter(user)
        args = [next(it) if s is None else (None if s == "" else getattr(self, s))
                for s in self.slots]
        for i, (t, d) in self.sizes.items():
            args[i] = user[t].shape[d]
        return self.gm(*args)


def scope_problem(example_inputs: Sequence[Any]) -> tuple[str, str]:
    """Why a graph on these inputs runs as Dynamo gave it: ``(key, message)``, or
    ``("", "")`` when FACT can compile it (see the module docstring, step 1)."""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    others = [x for x in example_inputs if not isinstance(x, (torch.Tensor, int, torch.SymInt))]
    if others:
        return ("input", f"an input is a {type(others[0]).__name__}: FACT graphs take tensors "
                f"and sizes")
    devices = sorted({t.device.type for t in tensors} - set(KERNEL_DEVICE_TYPES))
    if devices:
        return (f"device:{devices[0]}", f"tensors on {', '.join(devices)}: FACT kernels run "
                f"on CUDA devices; move the model and its inputs to CUDA")
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return ("autograd", "this graph needs autograd (grad mode is on and a tensor requires "
                "grad): FACT compiles forward/inference only; call the compiled model under "
                "torch.no_grad() or torch.inference_mode()")
    return ("", "")


def inductor_alone(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """``gm`` compiled by Inductor alone, as ``torch.compile(backend="inductor")`` would
    compile this subgraph (``torch._inductor.compile_fx.compile_fx``); when Inductor
    raises, said once, Dynamo's graph as it is (a model never stops working because
    Inductor cannot compile it)."""
    from torch._inductor.compile_fx import compile_fx
    try:
        return compile_fx(gm, list(example_inputs))
    except Exception as exc:  # Dynamo/Inductor errors have no common base class
        warn_once(f"backend-inductor:{type(exc).__name__}", f"fact backend: Inductor failed "
                  f"on a subgraph ({type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}); "
                  f"it runs as Dynamo gave it")
        return gm.forward


def _refused(gm: torch.fx.GraphModule, key: str, message: str,
           example_inputs: Sequence[Any] | None = None,
           opts: BackendOptions | None = None) -> Callable:
    """A subgraph FACT leaves: compiled by Inductor alone (``remainder="inductor"``, when
    ``example_inputs`` are given), else run as Dynamo gave it; said once per ``key``."""
    if example_inputs is not None and opts is not None and opts.remainder == "inductor":
        warn_once(f"backend:{key}", f"fact backend: {message}; Inductor compiles the graph")
        return inductor_alone(gm, example_inputs)
    warn_once(f"backend:{key}", f"fact backend: {message}; the graph runs as Dynamo gave it")
    return gm.forward


def _graph_key(graph: dict, policy: str, opts: BackendOptions) -> str:
    from fact import __version__
    body = json.dumps({"graph": {k: v for k, v in graph.items() if k != "name"},
                       "policy": policy, "tune_budget": opts.tune_budget,
                       "registry": opts.registry, "fact": __version__}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ the backend

def fact_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: Mapping[str, Any] | None = None, mode: str | None = None
                 ) -> Callable[..., Any]:
    """The ``fact`` Dynamo backend (see the module docstring).

    Args:
        gm: one subgraph Dynamo captured.
        example_inputs: its inputs on the first call (tensors: user inputs, parameters,
            buffers), one per placeholder.
        options: :class:`BackendOptions` fields, from ``torch.compile(..., options=...)``.
        mode: ``torch.compile``'s mode; FACT has none and ignores it.

    Returns:
        A callable with the graph's signature: FACT's module for the subgraph, or ``gm``'s
        own forward when FACT leaves the subgraph as it is (and says why once).

    Raises:
        ValueError: an unknown option (Dynamo reports it as a backend failure).
    """
    opts = BackendOptions.parse(options)
    key, message = scope_problem(example_inputs)
    if key:
        return _refused(gm, key, message, example_inputs, opts)
    from torch._subclasses.fake_tensor import is_fake
    if any(isinstance(x, torch.Tensor) and is_fake(x) for x in example_inputs):
        return _Deferred(gm, opts)
    return _build(gm, example_inputs, opts)


class _Deferred:
    """Compiles on the first call, whose tensors are real, when the backend was handed fake
    ones (a caller other than Dynamo's own compile, e.g. a wrapping backend): export needs
    real buffer contents (a causal mask's value class) and verification real data."""

    def __init__(self, gm: torch.fx.GraphModule, opts: BackendOptions) -> None:
        self.gm, self.opts = gm, opts
        self.fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self.fn is None:
            key, message = scope_problem(args)
            self.fn = (_refused(self.gm, key, message, args, self.opts) if key
                       else _build(self.gm, args, self.opts))
        return self.fn(*args)


def _build(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
           opts: BackendOptions) -> Callable[..., Any]:
    """:func:`_compile`, with the outcomes that leave the graph as it is said once."""
    from fact.bench import Float64ReferenceError
    from fact.export import ExportError
    from fact.factc import FactcError
    from fact.gpu import GpuRequired
    from fact.plan_summary import NothingMatched
    from fact.runtime import ArtifactError
    try:
        return _compile(gm, example_inputs, opts)
    except NothingMatched as exc:
        logger.info("fact backend: a subgraph of %d nodes has no FACT pattern: %s",
                    len(gm.graph.nodes), exc)
        if opts.remainder == "inductor":
            return inductor_alone(gm, example_inputs)
        return gm.forward
    except GpuRequired as exc:
        return _refused(gm, "no-gpu", f"{str(exc).splitlines()[0]}", example_inputs, opts)
    except (ExportError, FactcError, ArtifactError, Float64ReferenceError, OSError) as exc:
        # Said once per distinct error: another subgraph's other error is said too.
        return _refused(gm, f"error:{type(exc).__name__}:{exc}", f"{type(exc).__name__}: {exc}",
                      example_inputs, opts)


def _writes(program: torch.export.ExportedProgram) -> str:
    """The inputs, parameters and buffers an exported (functionalized,
    :func:`fact.export.functionalized`) program writes, and any in-place op left, named
    ("" when none). In-place ops on intermediates were functionalized away at export."""
    from fact.export import in_place_ops
    names = in_place_ops(program)
    names += sorted({f"{s.kind.name.lower()} of {s.target}"
                     for s in program.graph_signature.output_specs
                     if s.kind.name != "USER_OUTPUT"})
    return ", ".join(names)


class _Compiled:
    """The callable handed back to Dynamo: the user inputs to FACT's module, its outputs as
    the graph returned them."""

    def __init__(self, module: torch.nn.Module, lifted: _Lifted, structure: type | None,
                 policy: str) -> None:
        """``structure``: ``tuple`` or ``list`` when the graph returns one (Dynamo's graphs
        return a tuple), ``None`` when it returns one value. The module runs under
        ``policy``'s setting (:func:`fact.precision.fact_precision`: the ATen ops it still
        runs use the policy's matmul precision), as it was verified and tuned."""
        from fact.precision import fact_precision
        self.module, self.lifted, self.structure = module, lifted, structure
        self.policy, self._precision = policy, fact_precision

    def __call__(self, *args: Any) -> Any:
        with self._precision(self.policy):
            out = self.module(*self.lifted.user_inputs(args))
        outs = list(out) if isinstance(out, tuple) else [out]
        return self.structure(outs) if self.structure is not None else outs[0]


def _compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
             opts: BackendOptions) -> Callable[..., Any]:
    from fact.artifact import cache_root, load_artifact
    from fact.aten_check import check_aten_paths
    from fact.export import export_program, graph_from_program
    from fact.optimize import OptimizeOptions, compile_artifact, verify
    from fact.precision import resolve_policy
    policy = resolve_policy(opts.precision)
    try:
        lifted = _Lifted(gm, example_inputs)
    except ValueError as exc:
        return _refused(gm, "dynamic", f"dynamic shapes: {exc}", example_inputs, opts)
    user = lifted.user_inputs(example_inputs)
    # Outside Dynamo's tracing and compile contexts: the guards torch.export makes for a
    # dynamic dim (on its own frame's locals) must not join the guards of Dynamo's frame.
    with torch._guards.tracing(None), torch._guards.compile_context(None):
        program = export_program(lifted, user, lifted.dynamic_shapes())
    writes = _writes(program)
    if writes:
        # Checked before anything runs: verification would run the graph, and its writes,
        # again (e.g. BatchNorm's running statistics in training mode).
        return _refused(gm, "mutation", f"the graph writes to its inputs or buffers ({writes}); "
                      f"FACT compiles graphs without side effects (inference)", example_inputs,
                      opts)
    graph = graph_from_program(program, name="Subgraph", buckets=opts.buckets)
    if opts.bucket_bound is not None:
        for sym in (graph.get("symbols") or {}).values():
            sym["bound"] = int(opts.bucket_bound)
    key = _graph_key(graph, policy, opts)
    work = os.path.join(opts.out_dir or os.path.join(opts.cache or cache_root(), "backend"), key)
    artifact = os.path.join(work, "artifact")
    if os.path.isfile(os.path.join(artifact, "manifest.json")):
        logger.info("fact backend: subgraph %s: loading %s (compiled before)", key, artifact)
    else:
        logger.info("fact backend: subgraph %s: %d nodes, compiling into %s", key,
                    len(graph["nodes"]), work)
        options = OptimizeOptions(out_dir=work, jobs=opts.jobs, factc=opts.factc,
                                  cache=opts.cache, tune_budget=opts.tune_budget,
                                  registry=opts.registry, problem_name=f"subgraph {key}",
                                  save_params=False, verbose=opts.verbose,
                                  progress=opts.progress)
        compile_artifact(lifted, user, policy, options, program=program, graph=graph,
                         require_patterns=True)
    module = load_artifact(artifact, lifted, factc=opts.factc)
    if getattr(module, "artifact_dir", None) == artifact and module.bindings:
        module.write_source(artifact)  # the generated module's readable source, module.py
    # As fact.optimize does: a kernel realize could only compare with a bound of its ATen
    # path (attention) is timed against its own ATen nodes, and disabled when slower.
    checked = check_aten_paths(module, user, policy)
    for pid, result in checked.items():
        if not result.get("kept", True):
            logger.info("fact backend: subgraph %s: %s runs its ATen nodes (%.4g ms against "
                        "the kernel's %.4g)", key, pid, result["aten_ms"], result["kernel_ms"])
    module.set_remainder(opts.remainder)
    disabled = module.disabled_patterns()
    if disabled and opts.remainder == "inductor":  # their ATen nodes, fused by Inductor
        module = module.handing_back(sorted(disabled), disabled)
    if opts.verify:  # the module that runs: its disabled kernels' nodes handed back
        checks = verify(module, lifted, user, policy)
        if not checks["fact"].ok:
            return _refused(gm, f"verify:{key}", f"subgraph {key} failed verification against "
                          f"float64 ({checks['fact'].reason})", example_inputs, opts)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    returned = out_node.args[0]
    structure = type(returned) if isinstance(returned, (tuple, list)) else None
    from fact.runtime import kernel_patterns
    compiled = _Compiled(module, lifted, structure, policy)
    if opts.remainder == "inductor" and opts.measure:
        chosen = _measured(gm, example_inputs, compiled, work, opts)
        if chosen is not None:
            return chosen
    kernels = len(kernel_patterns(module.manifest))
    logger.info("fact backend: subgraph %s: %d pattern(s), %d FACT kernel(s), remainder %s",
                key, len((module.manifest or {}).get("patterns", [])), kernels, opts.remainder)
    return compiled


#: The measured composition of a subgraph, in its folder (read back on a later compile).
COMPOSITION_FILE = "composition.json"


def _measured(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], compiled: "_Compiled",
              work: str, opts: BackendOptions) -> Callable[..., Any] | None:
    """The measured composition of one subgraph (:mod:`fact.composition`): Inductor alone
    when it measured faster, else the FACT module with the groups the ablation dropped
    handed back (``compiled`` itself when none were). The decision is written to
    ``<work>/composition.json`` and, on a later compile of the same subgraph, read back
    instead of timed again. ``None``: keep ``compiled``."""
    from fact.composition import HANDED_BACK, Composition, compose, median_timer, pattern_groups
    from fact.runtime import kernel_patterns
    module, path = compiled.module, os.path.join(work, COMPOSITION_FILE)
    ids = [p["id"] for p in kernel_patterns(module.manifest)]
    decision = None
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as f:
                decision = Composition.from_json(json.load(f))
            if decision.budget_s != opts.ablation_budget_s:
                logger.info("fact backend: %s was measured with an ablation budget of %s s, "
                            "now %s: measuring again", path, decision.budget_s,
                            opts.ablation_budget_s)
                decision = None
        except (OSError, ValueError) as exc:
            logger.info("fact backend: %s unreadable (%s); measuring again", path, exc)
    from fact.precision import fact_precision
    alone_fn = None

    concrete = [int(x.node.hint) if isinstance(x, torch.SymInt) else x for x in example_inputs]

    def alone() -> Any:  # Inductor alone, compiled on first use, under the same policy
        nonlocal alone_fn
        if alone_fn is None:
            alone_fn = inductor_alone(gm, example_inputs)
        with fact_precision(compiled.policy):
            return alone_fn(*concrete)

    built: dict[frozenset, _Compiled] = {}  # the variants the ablation built, by what they drop
    if decision is None:
        def build(dropped: Sequence[str]) -> Callable[[], Any]:
            variant = compiled if not dropped else _Compiled(
                module.handing_back(dropped, HANDED_BACK), compiled.lifted,
                compiled.structure, compiled.policy)
            built[frozenset(dropped)] = variant
            variant(*concrete)  # compiled here, not in the timing
            return lambda: variant(*concrete)

        alone()
        decision = compose(build, alone, pattern_groups(kernel_patterns(module.manifest)),
                           median_timer(), opts.ablation_budget_s)
        if module.remainder.failed:  # FACT ran op by op: the timing is not a decision
            logger.info("fact backend: %s: not kept (Inductor failed on FACT's module: %s)",
                        path, module.remainder.failed)
        else:
            try:
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(decision.to_json(), f, indent=1)
            except OSError as exc:
                logger.info("fact backend: could not write %s: %s", path, exc)
    logger.info("fact backend: %s: FACT+Inductor %.4g ms, Inductor alone %.4g ms (first); "
                "%.4g / %.4g ms after the ablation (%d of %d kernel patterns handed back, "
                "%.1f s): %s", os.path.basename(work), decision.fact_ms, decision.inductor_ms,
                decision.final_fact_ms, decision.final_inductor_ms, len(decision.dropped),
                len(ids), decision.seconds,
                "Inductor alone" if decision.choice == "inductor" else "FACT+Inductor")
    if decision.choice == "inductor":
        return alone_fn if alone_fn is not None else inductor_alone(gm, example_inputs)
    dropped = decision.handed_back(ids)
    if not dropped:
        return None
    if frozenset(dropped) in built:  # measured just now: compiled already
        return built[frozenset(dropped)]
    return _Compiled(module.handing_back(dropped, HANDED_BACK), compiled.lifted,
                     compiled.structure, compiled.policy)
