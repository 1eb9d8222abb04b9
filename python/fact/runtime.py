"""Load a FACT artifact (docs/05-composition.md) as an ``nn.Module``.

The module runs a generated ``torch.fx.GraphModule`` (:mod:`fact.module_gen`; its source
is :meth:`FactModule.source`, written into the artifact as ``module.py``):

- a node outside every pattern is a call of its ATen op (``aten.linear.default`` ->
  ``torch.ops.aten.linear.default``);
- a pattern with ``impl: "cutlass"`` is one call of its kernel (:class:`fact.kernels.FactKernel`:
  the binding, or under tracing the custom op ``fact::<pattern id>``), placed by its family
  (:meth:`fact.families.Family.emit`); its other nodes are gone, unless a value they produce
  is used outside the pattern. The entry's kernel family (:func:`fact.families.family_of`,
  by its ``"abi"``) checks it against the graph when the artifact loads, names the operands
  that come first among the kernel's inputs, and fills the family's arguments structure on
  each call (:mod:`fact.families.gemm`: a GEMM and its fused elementwise tail;
  :mod:`fact.families.attention`: fused attention, whose causal masks proven from a
  registered buffer are re-checked at load, :meth:`FactModule.check_causal_buffers`);
  operands that do not fit run the pattern's ATen nodes (a generated module of its own);
  an entry with ``"buckets"`` (symbolic sizes) calls a :class:`fact.buckets.BucketedBinding`,
  which picks the bucket of each call's size;
- in a graph with symbols (docs/02, version 2), size arguments are computed per call from
  the inputs' dims (:class:`fact.module_gen.ModuleBuilder`);
- a pattern with ``impl: "vendor"`` runs its ATen ops (the vendor library does the work);
  when its GEMM's elementwise tail runs as one generated kernel after it, the entry's
  ``"tail"`` is a manifest pattern of its own (``impl: "cutlass"``, id ``<id>_tail``) that
  runs the tail's nodes through ``fact::<id>_tail`` (:func:`kernel_patterns`);
- on CUDA, with static shapes and nothing that waits for the device, calls replay one
  captured CUDA graph (:mod:`fact.cuda_graph`);
- the manifest's ``"narrowed"`` values are stored in their narrow dtype (:mod:`fact.narrowing`):
  the kernels' types say so, narrowed parameters are converted once when the module is
  built, and the ATen nodes cast where the narrowing rule says.

Parameters, buffers and constants are taken from ``model`` by their state-dict ``target``
when a model is given, else from ``artifact/params.pt`` (a ``{target: tensor}`` dict that
:func:`save_params` writes).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Sequence

import torch

from fact import module_gen
from fact.buckets import BucketedBinding
from fact.cuda_graph import GraphReplay, replay_blocker
from fact.export import GRAPH_VERSIONS
from fact.families import family_of
from fact.kernels import FactKernel, KernelBinding, KernelLibrary, register_binding
from fact.manifest import check_manifest
from fact.remainder import RemainderRunner, handed_back
from fact.narrowing import (Narrowed, narrowed_fallback, narrowed_summary, narrowed_values,
                            stored_types)
from fact.module_gen import (GenerationError, KernelSite, drop_identities, generate,
                             generate_nodes, node_inputs)

__all__ = ["ArtifactError", "FactModule", "load", "load_graph_module", "save_params",
           "resolve_op", "kernel_patterns", "PARAMS_FILE", "MODULE_SOURCE_FILE"]

PARAMS_FILE = "params.pt"
#: The generated module's readable source in an artifact (:meth:`FactModule.write_source`).
MODULE_SOURCE_FILE = "module.py"


class ArtifactError(RuntimeError):
    """The artifact is incomplete or inconsistent; the message names the file or value."""


def kernel_patterns(manifest: Mapping | None) -> list[dict]:
    """The manifest entries whose nodes a FACT kernel runs, in manifest order: the patterns
    with ``impl: "cutlass"``, and the ``"tail"`` entry (itself ``impl: "cutlass"``) of a
    vendor pattern whose elementwise tail runs as one generated kernel after the vendor GEMM
    (docs/05-composition.md, "Vendor GEMM, fused tail"). The entries are the manifest's own
    dicts, so updating one updates the manifest."""
    out = []
    for p in (manifest or {}).get("patterns", []):
        if p.get("impl") == "cutlass":
            out.append(p)
        elif isinstance(p.get("tail"), dict) and p["tail"].get("impl") == "cutlass":
            out.append(p["tail"])
    return out


def resolve_op(name: str) -> Callable:
    """``"aten.linear.default"`` -> ``torch.ops.aten.linear.default``.

    Raises:
        ArtifactError: no such operator or overload.
    """
    try:
        return module_gen.resolve_op(name)
    except GenerationError as exc:
        raise ArtifactError(str(exc)) from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object's members as a dict; a key given twice is an error, as in the engine's
    reader (src/base/json_format.h), never the silent "last one wins" of ``json.load``."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f'duplicate key "{key}" in one object')
        out[key] = value
    return out


def _read_json(path: str, fmt: str) -> dict:
    """Reads an artifact file (manifest.json, graph.json) of format ``fmt``, version 1
    (graph.json: 1, or 2 with symbols).

    Raises:
        ArtifactError: the file is missing, is not JSON, holds a key twice in one object, is
            not an object, or is of another format or version, or (a manifest) a member the
            runtime reads is malformed (:func:`fact.manifest.check_manifest`); the message
            names ``path``.
    """
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, object_pairs_hook=_unique_keys)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: missing") from exc
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise ArtifactError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ArtifactError(f"{path}: expected a JSON object of format {fmt}, found {type(doc).__name__}")
    versions = GRAPH_VERSIONS if fmt == "fact.graph" else (1,)
    if doc.get("format") != fmt or doc.get("version") not in versions:
        raise ArtifactError(f"{path}: expected format {fmt} version "
                            f"{' or '.join(map(str, versions))}, found "
                            f"{doc.get('format')} version {doc.get('version')}")
    if fmt == "fact.manifest":
        check_manifest(doc, path, ArtifactError)
    return doc


def _get_target(model: torch.nn.Module, target: str) -> torch.Tensor | None:
    obj: Any = model
    for part in target.split("."):
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    return obj if isinstance(obj, torch.Tensor) else None


def _param_values(graph: dict, model: torch.nn.Module | None,
                  artifact_dir: str | None) -> dict[str, torch.Tensor]:
    """Placeholder name -> tensor for every param/buffer/constant of ``graph``."""
    saved: dict[str, torch.Tensor] | None = None
    values: dict[str, torch.Tensor] = {}
    for p in graph["params"]:
        t = _get_target(model, p["target"]) if model is not None else None
        if t is None:
            if saved is None:
                path = os.path.join(artifact_dir or "", PARAMS_FILE)
                saved = (torch.load(path, map_location="cpu", weights_only=True)
                         if artifact_dir and os.path.isfile(path) else {})
            t = saved.get(p["target"])
        if t is None:
            where = "the model" if model is not None else "no model was given"
            raise ArtifactError(f"{p['kind']} {p['name']} (target {p['target']!r}) not found: "
                                f"{where}, and {PARAMS_FILE} does not hold it")
        values[p["name"]] = t
    return values


def save_params(tensors: Mapping[str, torch.Tensor], artifact_dir: str) -> str:
    """Write ``{target: tensor}`` (moved to CPU) to ``artifact_dir/params.pt``; returns the path.

    ``tensors`` is typically ``{**ep.state_dict, **ep.constants}`` of the exported program.
    """
    path = os.path.join(artifact_dir, PARAMS_FILE)
    torch.save({k: v.detach().cpu() for k, v in tensors.items()}, path)
    return path


class FactModule(torch.nn.Module):
    """A FACT graph as an ``nn.Module``: ``forward(*inputs)`` in the graph's input order.

    The module runs a generated ``torch.fx.GraphModule`` (:attr:`generated`, made by
    :func:`fact.module_gen.generate`): each cutlass pattern of the manifest is one call of
    its kernel (a :class:`fact.kernels.FactKernel`, ``self.fact_<id>``), every other node its
    ATen op; :meth:`source` is its readable code. With static shapes and nothing that waits
    for the device, calls on CUDA tensors replay one captured CUDA graph
    (:class:`fact.cuda_graph.GraphReplay`, :attr:`replay`).

    Returns one tensor when the graph has one output, else a tuple. Parameters and buffers
    of the graph are registered under their placeholder names (``p_fc_weight``), so
    ``.to(device)`` moves them; tensors a family re-lays out at load are buffers too.

    Args:
        graph: the graph dict. params: placeholder name -> tensor. manifest: the manifest
            dict (or ``None``: every node runs its ATen op). library: the kernel library
            (needed when the manifest has cutlass patterns).
        cuda_graph: CUDA-graph replay: ``None`` on when possible, ``True`` asked for,
            ``False`` off (:class:`fact.cuda_graph.GraphReplay`).
        remainder: what runs the generated module: ``"aten"`` (one ATen call per node) or
            ``"inductor"`` (``torch.compile`` of it, the kernels opaque custom ops;
            :class:`fact.remainder.RemainderRunner`).

    Attributes:
        graph: the graph dict. manifest: the manifest dict (or ``None``).
        bindings: pattern id -> :class:`KernelBinding` for cutlass patterns (a
            :class:`fact.buckets.BucketedBinding` for one with buckets).
        dropped_nodes: graph nodes left out (the manifest's ``"dropped"``:
            :func:`fact.module_gen.drop_identities`).
        narrowed: value -> :class:`fact.narrowing.Narrowed`, the manifest's ``"narrowed"``
            values the module stores in their narrow dtype.
        generated: the generated ``torch.fx.GraphModule``.
        remainder: the :class:`fact.remainder.RemainderRunner` that calls it.
        library: the kernel library (``None`` without cutlass patterns).
        replay: the CUDA-graph replay of :attr:`generated`.

    Raises:
        ArtifactError: a pattern does not fit the graph, or the graph cannot be generated.
    """

    def __init__(self, graph: dict, params: Mapping[str, torch.Tensor],
                 manifest: dict | None = None, library: KernelLibrary | None = None,
                 cuda_graph: bool | None = None, remainder: str = "aten") -> None:
        super().__init__()
        self.graph = graph
        self.manifest = manifest
        self.library = library
        #: The artifact directory it was loaded from (:func:`load`), what :meth:`save` copies.
        self.artifact_dir: str | None = None
        self.input_names = [i["name"] for i in graph["inputs"]]
        symbols = set(graph.get("symbols") or ())
        missing = symbols - set(module_gen.symbol_dims(
            [(i["name"], i["type"]) for i in graph["inputs"]], symbols))
        if missing:
            raise ArtifactError(f"symbols {sorted(missing)} are the size of no input dim")
        self._param_names = [p["name"] for p in graph["params"]]
        for name, t in params.items():
            if isinstance(t, torch.nn.Parameter):
                self.register_parameter(name, t)
            else:
                self.register_buffer(name, t, persistent=False)
        self.bindings: dict[str, KernelBinding | BucketedBinding] = {}
        # Pattern id -> the buffers its kernel's family proved it from (e.g. a causal
        # mask's tril buffer), re-checked below.
        self._proven_buffers: dict[str, list[str]] = {}
        try:
            narrowed = narrowed_values(graph, (manifest or {}).get("narrowed"))
        except ValueError as exc:
            raise ArtifactError(f"manifest of graph {graph.get('name')!r}: {exc}") from exc
        try:  # the identities the canonical form dropped are gone from what runs
            self._graph, self.dropped_nodes = drop_identities(
                graph, (manifest or {}).get("dropped") or [])
            # A narrowed value a dropped identity made is gone with it.
            made = {o["name"] for n in self._graph["nodes"] for o in n["outputs"]}
            self.narrowed: dict[str, Narrowed] = {
                v: n for v, n in narrowed.items() if v in made or v in self._param_names}
            sites = self._kernel_sites(manifest, library)
            self.generated, self._aten_nodes, load_time = generate(
                self._graph, sites, self._param_names, self.narrowed)
        except GenerationError as exc:
            raise ArtifactError(f"graph {graph.get('name')!r}: {exc}") from exc
        # Re-laid out or converted once, here (in order: a converted parameter comes first).
        self._load_time = load_time
        for name, (compute, sources) in load_time.items():
            self.register_buffer(name, compute(*(getattr(self, s) for s in sources)),
                                 persistent=False)
        self._tensor_names = self._param_names + list(load_time)
        self.remainder = RemainderRunner(self.generated, remainder, keyed=len(self.input_names))
        self.replay = GraphReplay(self._run, self.bindings, replay_blocker(self._graph), cuda_graph,
                                  requires_grad=any(t.requires_grad for t in params.values()))
        self.check_causal_buffers()

    # ------------------------------------------------------------- building
    def _kernel_sites(self, manifest: dict | None, library: KernelLibrary | None
                      ) -> list[KernelSite]:
        """A binding and a :class:`KernelSite` per cutlass pattern of ``manifest``."""
        nodes = {n["name"]: n for n in self._graph["nodes"]}
        types: dict[str, dict | None] = {}
        for v in self._graph["inputs"] + self._graph["params"]:
            types[v["name"]] = v["type"]
        for n in self._graph["nodes"]:
            for o in n["outputs"]:
                types[o["name"]] = o["type"]
        graph_types, types = types, stored_types(types, self.narrowed)
        params = {p["name"]: p for p in self._graph["params"]}
        sites: list[KernelSite] = []
        for pat in kernel_patterns(manifest):
            members = [nodes[n] for n in pat["nodes"] if n in nodes]
            if len(members) != len(pat["nodes"]):
                raise ArtifactError(f"pattern {pat['id']}: nodes {pat['nodes']} not all in "
                                    f"the graph")
            if not any(pat["output"] == o["name"] for m in members for o in m["outputs"]):
                raise ArtifactError(f"pattern {pat['id']}: output {pat['output']} is not "
                                    f"produced by its nodes")
            if library is None:
                raise ArtifactError(f"pattern {pat['id']} needs the kernel library")
            binding, graph_inputs, defines = self._binding(pat, members, types, library,
                                                           graph_types, self.narrowed)
            read = [r for m in members for r in node_inputs(m)]
            buffers = binding.family.proven_buffers(pat, read, params)
            if buffers:
                self._proven_buffers[pat["id"]] = buffers
            self.bindings[pat["id"]] = binding
            kernel = FactKernel(binding, register_binding(binding))
            operands = pat.get("operands") or {}
            sites.append(KernelSite(f"fact_{pat['id']}", kernel, pat, graph_inputs, defines,
                                    binding.family.emit,
                                    [operands[r] for r in binding.family.load_time_roles if r in operands]))
        return sites

    @staticmethod
    def _binding(pat: dict, members: Sequence[dict], types: Mapping[str, dict | None],
                 library: KernelLibrary, graph_types: Mapping[str, dict | None] | None = None,
                 narrowed: Mapping[str, Narrowed] | None = None
                 ) -> tuple[KernelBinding | BucketedBinding, list[str], list[str]]:
        """The pattern's binding, the graph values its call reads (what the generated module
        orders it by) and the values its emitter defines. ``types`` are the stored types (a
        narrowed value's narrow dtype), ``graph_types`` the graph's own, which a family's own
        fallback is written for (:func:`fact.narrowing.narrowed_fallback`)."""
        try:
            family = family_of(pat)
            family.check_pattern(pat, types)
        except ValueError as exc:
            raise ArtifactError(f"pattern {pat['id']}: {exc}") from exc
        produced = {o["name"] for m in members for o in m["outputs"]}
        input_names: list[str] = []
        for role in family.roles:
            name = pat.get("operands", {}).get(role)
            if name in produced:
                raise ArtifactError(f"pattern {pat['id']}: operand {role} = {name} is computed "
                                    f"by the pattern's own nodes, which the kernel replaces")
            if name and name not in input_names:
                input_names.append(name)
        for m in members:
            for r in node_inputs(m):
                if r not in produced and r not in input_names:
                    input_names.append(r)
        output = pat["output"]
        extra = dict(pat.get("extra_outputs") or {})  # role -> value the kernel also writes
        if types.get(output) is None:
            raise ArtifactError(f"pattern {pat['id']}: output {output} has no tensor type")
        for role, value in extra.items():
            if value not in produced or types.get(value) is None:
                raise ArtifactError(f"pattern {pat['id']}: extra output {role} = {value} is not "
                                    f"a tensor its nodes produce")
        try:  # what the kernel takes and writes, when not the pattern's values as they are
            io = None if pat.get("buckets") else family.kernel_io(pat, input_names, types)
        except ValueError as exc:
            raise ArtifactError(f"pattern {pat['id']}: {exc}") from exc
        if io is not None:
            kernel_inputs, out_type, fallback = io.inputs, io.out_type, io.fallback
            if narrowed:
                mixed = [v for v in io.defines if (types.get(v) or {}).get("dtype")
                         not in (None, io.out_type["dtype"])]
                if mixed:  # the values defined from the one result share its dtype
                    raise ArtifactError(f"pattern {pat['id']}: its kernel writes one "
                                        f"{io.out_type['dtype']} result, but {', '.join(mixed)} "
                                        f"defined from it are narrowed otherwise")
                fallback = _narrowed_io_fallback(family, pat, input_names, io, types,
                                                 graph_types or types)
            types = {**types, **io.types}
            defines = list(io.defines)
        else:
            kernel_inputs, out_type = input_names, None
            defines = [output, *extra.values()]
            try:  # the pattern's ATen nodes, generated like the module
                aten = generate_nodes(members, input_names, [output, *extra.values()], types,
                                      narrowed)
            except GenerationError as exc:
                raise ArtifactError(f"pattern {pat['id']}: {exc}") from exc

            def fallback(inputs: Sequence[torch.Tensor]) -> Any:
                return aten(*inputs)

        def make(entry: dict, types: Mapping[str, dict | None]) -> KernelBinding:
            expected = {n: types[n] for n in kernel_inputs if types.get(n) is not None}
            extra_t = {role: types[value] for role, value in extra.items()}
            functions = library.kernel(entry["symbol"], family.args_type)
            # The family's call is made with the binding (e.g. a fused tail's inputs placed).
            # A bucket's own types give its output's (io is None with buckets).
            return KernelBinding(entry, functions, kernel_inputs, expected,
                                 out_type if io is not None else types[output], fallback, family,
                                 extra_t)

        try:
            if pat.get("buckets"):  # symbolic sizes: one binding per size, by bucket
                return (BucketedBinding(pat, input_names, types, make, fallback, family),
                        input_names, defines)
            return make(pat, types), input_names, defines
        except ValueError as exc:
            raise ArtifactError(f"pattern {pat['id']}: {exc}") from exc

    # -------------------------------------------------------------- running
    def forward(self, *inputs: torch.Tensor) -> Any:
        if len(inputs) != len(self.input_names):
            raise TypeError(f"expected {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        return self.replay(inputs)

    def _run(self, inputs: Sequence[torch.Tensor]) -> Any:
        """The generated module on ``inputs`` and this module's tensors (no replay)."""
        return self.remainder(*inputs, *(getattr(self, n) for n in self._tensor_names))

    def refresh_load_time(self) -> None:
        """Recompute the tensors made at load (re-laid or converted weights) from the
        parameters as they are now, in place (a captured CUDA graph keeps reading them).
        Call it after changing a parameter in place."""
        with torch.no_grad():
            for name, (compute, sources) in self._load_time.items():
                getattr(self, name).copy_(compute(*(getattr(self, s) for s in sources)))

    def set_remainder(self, mode: str) -> None:
        """Run the nodes outside the kernels under ``mode`` (:data:`fact.remainder.REMAINDERS`:
        ``"inductor"`` compiles them on the next call); drops the CUDA-graph capture.

        Raises:
            ValueError: an unknown mode.
        """
        self.remainder = RemainderRunner(self.generated, mode, keyed=len(self.input_names))
        self.replay.reset()

    def handing_back(self, pattern_ids: Sequence[str],
                     reason: str | Mapping[str, str]) -> "FactModule":
        """A new module over the same graph, tensors and kernel library in which the kernel
        patterns ``pattern_ids`` run their ATen nodes (:func:`fact.remainder.handed_back`,
        ``reason`` one for all or per id: under Inductor they are fused with the remainder).
        Same remainder mode and replay mode; the bindings are new (their fallback counts
        start at zero), on the device types of this module's.

        Raises:
            ValueError: an id names no kernel pattern. ArtifactError: as the constructor.
        """
        manifest = handed_back(self.manifest, pattern_ids, reason)
        params = {n: getattr(self, n) for n in self._param_names}
        module = FactModule(self.graph, params, manifest,
                            self.library if kernel_patterns(manifest) else None,
                            self.replay.mode, self.remainder.mode)
        module.artifact_dir = self.artifact_dir
        for pid, binding in module.bindings.items():
            binding.device_type = self.bindings[pid].device_type
        return module

    def _apply(self, fn: Callable, *args: Any, **kwargs: Any) -> "FactModule":
        self.replay.reset()  # the captured graph reads the tensors' old addresses
        return super()._apply(fn, *args, **kwargs)

    def source(self) -> str:
        """The generated module's Python source, after a header naming each kernel call and
        the narrowed values (what :meth:`write_source` writes)."""
        lines = [f"# FACT module of graph {self.graph.get('name')!r}: "
                 f"{len(self.bindings)} FACT kernel call(s), {len(self._aten_nodes)} ATen call(s)."]
        for pid, b in self.bindings.items():
            lines.append(f"# self.fact_{pid}: {b.family.name} kernel {b.kernel_name}, replaces "
                         f"{', '.join(b.pattern['nodes'])}")
        if self.narrowed:
            held = [{"value": v, "dtype": str(n.dtype).replace("torch.", "")}
                    for v, n in self.narrowed.items()]
            lines.append(f"# {narrowed_summary({'narrowed': held}, self.graph)}: "
                         f"{', '.join(self.narrowed)}")
        code = [line.rstrip() for line in self.generated.code.strip().splitlines()]
        return "\n".join(lines + code) + "\n"

    def write_source(self, directory: str | os.PathLike) -> str:
        """Write :meth:`source` to ``directory/module.py``; returns the path."""
        path = os.path.join(os.fspath(directory), MODULE_SOURCE_FILE)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.source())
        return path

    def aten_nodes(self) -> list[str]:
        """Names of the graph nodes this module runs as ATen ops, in order (the nodes of
        cutlass patterns are absent, unless a value they produce is read outside them)."""
        return list(self._aten_nodes)

    def fallback_counts(self) -> dict[str, int]:
        """Pattern id -> how many kernel calls fell back to ATen so far."""
        return {pid: b.fallbacks for pid, b in self.bindings.items()}

    def fallback_reasons(self) -> dict[str, dict[str, int]]:
        """Pattern id -> {reason: calls} of the kernel calls that fell back to ATen so far
        (patterns without fallbacks are left out)."""
        return {pid: dict(b.fallback_reasons) for pid, b in self.bindings.items()
                if b.fallback_reasons}

    def disabled_patterns(self) -> dict[str, str]:
        """Pattern id -> why every call of its kernel runs the ATen nodes instead (see
        :meth:`check_causal_buffers`)."""
        return {pid: b.disabled_reason for pid, b in self.bindings.items()
                if b.disabled_reason}

    def check_causal_buffers(self) -> dict[str, str]:
        """Re-check the buffers kernel patterns were proven from.

        Discovery matched a causal mask built from a registered buffer because, at export,
        the buffer was ``torch.tril(torch.ones(...))``; the pattern's family names such
        buffers (:meth:`fact.families.Family.proven_buffers`) and says whether each still
        holds what the proof relied on (:meth:`fact.families.Family.buffer_reason`; for
        attention :func:`fact.families.attention.tril_mismatch`: one comparison per buffer).
        A buffer of this module that no longer does disables the pattern's kernel: its calls
        run the pattern's ATen nodes, counted as fallbacks with the reason. Runs once when
        the module is built; call it again after changing a buffer in place.

        Returns:
            Pattern id -> reason, for the patterns disabled now (a pattern whose buffers
            pass again is enabled).
        """
        disabled: dict[str, str] = {}
        for pid, names in self._proven_buffers.items():
            binding = self.bindings[pid]
            reason = ""
            for name in names:
                reason = binding.family.buffer_reason(name, getattr(self, name))
                if reason:
                    break
            binding.disabled_reason = reason
            if reason:
                disabled[pid] = reason
        return disabled

    def save(self, path: str | os.PathLike) -> str:
        """Write this module as an artifact at ``path`` (its artifact's files and its tensors
        as they are now), loadable with ``fact.load(path)`` without re-tuning
        (:func:`fact.artifact.save_artifact`). Returns the path.

        Raises:
            ArtifactError: the module was not loaded from an artifact.
        """
        from fact.artifact import save_artifact  # (fact.artifact imports this module)
        return save_artifact(self, path)

    def extra_repr(self) -> str:
        n_kernels = len(self.bindings)
        return (f"graph={self.graph.get('name')!r}, nodes={len(self.graph['nodes'])}, "
                f"kernels={n_kernels}")


def _narrowed_io_fallback(family: Any, pat: dict, input_names: list[str], io: Any,
                          types: Mapping[str, dict | None], graph_types: Mapping[str, dict | None]
                          ) -> Callable[[Sequence[torch.Tensor]], Any]:
    """A family's own fallback (written for graph dtypes) under the narrowing rule: the same
    call's inputs and result typed as the graph says (``kernel_io`` on ``graph_types``)
    against their stored types."""
    plain = family.kernel_io(pat, input_names, graph_types)

    def dtypes(kio: Any, tys: Mapping[str, dict | None]) -> list[str | None]:
        return [((kio.types.get(n) or tys.get(n)) or {}).get("dtype") for n in kio.inputs]

    return narrowed_fallback(io.fallback, dtypes(io, types), dtypes(plain, graph_types),
                             io.out_type["dtype"], plain.out_type["dtype"])


def load_graph_module(graph: dict, model: torch.nn.Module | None = None,
                      artifact_dir: str | None = None) -> FactModule:
    """A graph dict alone (no kernels) as a module that runs every node as ATen."""
    return FactModule(graph, _param_values(graph, model, artifact_dir))


def load(artifact_dir: str | os.PathLike, model: torch.nn.Module | None = None,
         cuda_graph: bool | None = None, remainder: str = "aten") -> FactModule:
    """Load ``artifact_dir`` (manifest.json, graph.json, libfact_kernels.so) as a module.

    Args:
        artifact_dir: what ``factc compose`` wrote.
        model: the module the graph was exported from; its parameters and buffers are used
            (by state-dict target). Without it, ``artifact_dir/params.pt`` must hold them.
        cuda_graph: CUDA-graph replay (:class:`FactModule`): ``None`` when possible.
        remainder: ``"aten"`` or ``"inductor"`` (:class:`FactModule`).

    Raises:
        ArtifactError: a file is missing or malformed, a parameter cannot be found, or a
            pattern does not fit the graph.
        OSError: the kernel library cannot be loaded.
    """
    artifact_dir = os.fspath(artifact_dir)
    manifest = _read_json(os.path.join(artifact_dir, "manifest.json"), "fact.manifest")
    graph = _read_json(os.path.join(artifact_dir, manifest.get("graph", "graph.json")),
                       "fact.graph")
    library = None
    if kernel_patterns(manifest):
        lib_name = manifest.get("library", "libfact_kernels.so")
        if lib_name is None:
            raise ArtifactError(f"{os.path.join(artifact_dir, 'manifest.json')}: library is null, "
                                "but the manifest has cutlass patterns")
        lib_path = os.path.join(artifact_dir, lib_name)
        if not os.path.isfile(lib_path):
            raise ArtifactError(f"{lib_path}: missing (the manifest has cutlass patterns)")
        library = KernelLibrary(os.path.abspath(lib_path))
    params = _param_values(graph, model, artifact_dir)
    module = FactModule(graph, params, manifest, library, cuda_graph, remainder)
    module.artifact_dir = artifact_dir
    return module
