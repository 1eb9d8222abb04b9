"""Load a FACT artifact (docs/05-composition.md) as an ``nn.Module``.

The module interprets ``graph.json`` node by node:

- a node outside every pattern runs its ATen op (``aten.linear.default`` ->
  ``torch.ops.aten.linear.default``);
- a pattern with ``impl: "cutlass"`` runs at its output node through the custom op
  ``fact::<pattern id>`` (:mod:`fact.kernels`); its other nodes are skipped, unless a value
  they produce is used outside the pattern. The entry's kernel family
  (:func:`fact.families.family_of`, by its ``"abi"``) checks it against the graph when the
  artifact loads, names the operands that come first among the kernel's inputs, and fills
  the family's arguments structure on each call (:mod:`fact.families.gemm`: a GEMM and its
  fused elementwise tail; :mod:`fact.families.attention`: fused attention, whose causal
  masks proven from a registered buffer are re-checked at load,
  :meth:`FactModule.check_causal_buffers`);
- a pattern with ``impl: "vendor"`` runs its ATen ops (the vendor library does the work).

Parameters, buffers and constants are taken from ``model`` by their state-dict ``target``
when a model is given, else from ``artifact/params.pt`` (a ``{target: tensor}`` dict that
:func:`save_params` writes).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Sequence

import torch

from fact.buckets import BucketedBinding
from fact.export import GRAPH_VERSIONS
from fact.families import family_of
from fact.kernels import KernelBinding, KernelLibrary, fact_multi_op, fact_op, register_binding
from fact.symbols import read_symbols, size_value, symbol_sources

__all__ = ["ArtifactError", "FactModule", "load", "load_graph_module", "save_params",
           "resolve_op", "PARAMS_FILE"]

PARAMS_FILE = "params.pt"


class ArtifactError(RuntimeError):
    """The artifact is incomplete or inconsistent; the message names the file or value."""


class _Ref:
    """A reference to a graph value inside a decoded argument."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.name}"


def resolve_op(name: str) -> Callable:
    """``"aten.linear.default"`` -> ``torch.ops.aten.linear.default``.

    Raises:
        ArtifactError: no such operator or overload.
    """
    parts = name.split(".")
    if len(parts) < 3:
        raise ArtifactError(f"op name {name!r} is not <namespace>.<op>.<overload>")
    ns, op, overload = parts[0], ".".join(parts[1:-1]), parts[-1]
    try:
        return getattr(getattr(getattr(torch.ops, ns), op), overload)
    except (AttributeError, RuntimeError) as exc:
        raise ArtifactError(f"unknown operator {name}: {exc}") from exc


class _Sym:
    """A size argument of a graph with symbols (``{"sym": "4*B"}``), evaluated per call."""

    __slots__ = ("size",)

    def __init__(self, size: str) -> None:
        self.size = size


#: The env key of the call's symbol values (not a value name: those are identifiers).
_SYMBOLS = " symbols"


def _decode(arg: Any) -> Any:
    """A graph argument value (docs/02) as a Python/torch value; refs become :class:`_Ref`."""
    if isinstance(arg, list):
        return [_decode(a) for a in arg]
    if isinstance(arg, dict):
        if "ref" in arg:
            return _Ref(arg["ref"])
        if "sym" in arg:
            return _Sym(arg["sym"])
        if "float" in arg:
            return float(arg["float"])
        if "dtype" in arg:
            return getattr(torch, arg["dtype"])
        if "device" in arg:
            return torch.device(arg["device"])
        if "layout" in arg:
            return getattr(torch, arg["layout"])
        if "memory_format" in arg:
            return getattr(torch, arg["memory_format"])
        raise ArtifactError(f"cannot decode argument {arg!r}")
    return arg


def _resolve(arg: Any, env: Mapping[str, Any]) -> Any:
    if isinstance(arg, _Ref):
        return env[arg.name]
    if isinstance(arg, _Sym):
        return size_value(arg.size, env[_SYMBOLS])
    if isinstance(arg, list):
        return [_resolve(a, env) for a in arg]
    return arg


def _refs(arg: Any) -> list[str]:
    if isinstance(arg, _Ref):
        return [arg.name]
    if isinstance(arg, list):
        return [r for a in arg for r in _refs(a)]
    return []


class _AtenNode:
    """One graph node, ready to run as its ATen op."""

    def __init__(self, node: dict) -> None:
        self.name = node["name"]
        self.op_name = node["op"]
        self.op = resolve_op(node["op"])
        self.args = [_decode(a) for a in node["args"]]
        self.kwargs = {k: _decode(v) for k, v in node["kwargs"].items()}
        self.outputs = [o["name"] for o in node["outputs"]]
        self.single = len(self.outputs) == 1 and self.outputs[0] == self.name

    def inputs(self) -> list[str]:
        return _refs(self.args) + _refs(list(self.kwargs.values()))

    def run(self, env: dict[str, Any]) -> None:
        result = self.op(*_resolve(self.args, env),
                         **{k: _resolve(v, env) for k, v in self.kwargs.items()})
        if self.single:
            env[self.name] = result
        elif self.outputs:
            for name, value in zip(self.outputs, result):
                env[name] = value


class _KernelNode:
    """A cutlass pattern, run at its output node through ``fact::<id>``."""

    def __init__(self, binding: KernelBinding, handle: int) -> None:
        self.binding = binding
        self.handle = handle
        self.extra = list(binding.extra_outputs.values())  # values the kernel also writes
        self.op = (fact_multi_op if self.extra else fact_op)(binding.pattern["id"])
        self.output = binding.pattern["output"]

    def run(self, env: dict[str, Any]) -> None:
        inputs = [env[n] for n in self.binding.input_names]
        result = self.op(inputs, self.handle)
        if not self.extra:
            env[self.output] = result
            return
        env[self.output] = result[0]
        for name, value in zip(self.extra, result[1:]):
            env[name] = value


def _read_json(path: str, fmt: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: missing") from exc
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON: {exc}") from exc
    versions = GRAPH_VERSIONS if fmt == "fact.graph" else (1,)
    if doc.get("format") != fmt or doc.get("version") not in versions:
        raise ArtifactError(f"{path}: expected format {fmt} version "
                            f"{' or '.join(map(str, versions))}, found "
                            f"{doc.get('format')} version {doc.get('version')}")
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

    Returns one tensor when the graph has one output, else a tuple. Parameters and buffers
    of the graph are registered under their placeholder names (``p_fc_weight``), so
    ``.to(device)`` moves them.

    Attributes:
        graph: the graph dict. manifest: the manifest dict (or ``None``).
        bindings: pattern id -> :class:`KernelBinding` for cutlass patterns.
    """

    def __init__(self, graph: dict, params: Mapping[str, torch.Tensor],
                 manifest: dict | None = None, library: KernelLibrary | None = None) -> None:
        super().__init__()
        self.graph = graph
        self.manifest = manifest
        #: The artifact directory it was loaded from (:func:`load`), what :meth:`save` copies.
        self.artifact_dir: str | None = None
        self.input_names = [i["name"] for i in graph["inputs"]]
        # Symbol -> (input, dim, coefficient) it is read from per call (graphs with symbols).
        self._symbol_sources = symbol_sources(self.input_names,
                                              [i["type"] for i in graph["inputs"]],
                                              set(graph.get("symbols") or ()))
        missing = set(graph.get("symbols") or ()) - set(self._symbol_sources)
        if missing:
            raise ArtifactError(f"symbols {sorted(missing)} are the size of no input dim")
        self._param_names = [p["name"] for p in graph["params"]]
        for name, t in params.items():
            if isinstance(t, torch.nn.Parameter):
                self.register_parameter(name, t)
            else:
                self.register_buffer(name, t, persistent=False)
        self.bindings: dict[str, KernelBinding] = {}
        # Pattern id -> the buffers its kernel's family proved it from (e.g. a causal
        # mask's tril buffer), re-checked below.
        self._proven_buffers: dict[str, list[str]] = {}
        self._steps = self._build_steps(manifest, library)
        self.check_causal_buffers()

    # ------------------------------------------------------------- building
    def _build_steps(self, manifest: dict | None, library: KernelLibrary | None
                     ) -> list[_AtenNode | _KernelNode]:
        nodes = {n["name"]: _AtenNode(n) for n in self.graph["nodes"]}
        types: dict[str, dict | None] = {}
        for v in self.graph["inputs"] + self.graph["params"]:
            types[v["name"]] = v["type"]
        for n in self.graph["nodes"]:
            for o in n["outputs"]:
                types[o["name"]] = o["type"]
        consumers: dict[str, set[str]] = {}
        for n in nodes.values():
            for r in n.inputs():
                consumers.setdefault(r, set()).add(n.name)
        graph_outputs = {r for o in self.graph["outputs"] for r in _refs(_decode(o))}

        params = {p["name"]: p for p in self.graph["params"]}
        kernel_at: dict[str, _KernelNode] = {}  # output node name -> kernel step
        skipped: set[str] = set()
        for pat in (manifest or {}).get("patterns", []):
            if pat.get("impl") != "cutlass":
                continue
            members = [nodes[n] for n in pat["nodes"] if n in nodes]
            if len(members) != len(pat["nodes"]):
                raise ArtifactError(f"pattern {pat['id']}: nodes {pat['nodes']} not all in "
                                    f"the graph")
            out_node = next((m for m in members if pat["output"] in m.outputs), None)
            if out_node is None:
                raise ArtifactError(f"pattern {pat['id']}: output {pat['output']} is not "
                                    f"produced by its nodes")
            if library is None:
                raise ArtifactError(f"pattern {pat['id']} needs the kernel library")
            binding = self._binding(pat, members, types, library)
            read = [r for m in members for r in m.inputs()]
            buffers = binding.family.proven_buffers(pat, read, params)
            if buffers:
                self._proven_buffers[pat["id"]] = buffers
            kernel_at[out_node.name] = _KernelNode(binding, register_binding(binding))
            self.bindings[pat["id"]] = binding
            member_names = {m.name for m in members}
            written = set((pat.get("extra_outputs") or {}).values())  # by the kernel too
            for m in members:
                if m is out_node:
                    continue
                used_outside = any(o not in written and
                                   (o in graph_outputs or consumers.get(o, set()) - member_names)
                                   for o in m.outputs)
                if not used_outside:
                    skipped.add(m.name)
        steps: list[_AtenNode | _KernelNode] = []
        for name, node in nodes.items():
            if name in kernel_at:
                steps.append(kernel_at[name])
            elif name not in skipped:
                steps.append(node)
        return steps

    @staticmethod
    def _binding(pat: dict, members: Sequence[_AtenNode], types: Mapping[str, dict | None],
                 library: KernelLibrary) -> KernelBinding | BucketedBinding:
        try:
            family = family_of(pat)
            family.check_pattern(pat, types)
        except ValueError as exc:
            raise ArtifactError(f"pattern {pat['id']}: {exc}") from exc
        produced = {o for m in members for o in m.outputs}
        input_names: list[str] = []
        for role in family.roles:
            name = pat.get("operands", {}).get(role)
            if name in produced:
                raise ArtifactError(f"pattern {pat['id']}: operand {role} = {name} is computed "
                                    f"by the pattern's own nodes, which the kernel replaces")
            if name and name not in input_names:
                input_names.append(name)
        for m in members:
            for r in m.inputs():
                if r not in produced and r not in input_names:
                    input_names.append(r)
        output = pat["output"]
        extra = dict(pat.get("extra_outputs") or {})  # role -> value the kernel also writes

        def fallback(inputs: Sequence[torch.Tensor]) -> Any:
            env: dict[str, Any] = dict(zip(input_names, inputs))
            for m in members:
                m.run(env)
            return [env[output], *(env[v] for v in extra.values())] if extra else env[output]

        if types.get(output) is None:
            raise ArtifactError(f"pattern {pat['id']}: output {output} has no tensor type")
        for role, value in extra.items():
            if value not in produced or types.get(value) is None:
                raise ArtifactError(f"pattern {pat['id']}: extra output {role} = {value} is not "
                                    f"a tensor its nodes produce")

        def make(entry: dict, types: Mapping[str, dict | None]) -> KernelBinding:
            expected = {n: types[n] for n in input_names if types.get(n) is not None}
            extra_t = {role: types[value] for role, value in extra.items()}
            functions = library.kernel(entry["symbol"], family.args_type)
            # The family's call is made with the binding (e.g. a fused tail's inputs placed).
            return KernelBinding(entry, functions, input_names, expected, types[output],
                                 fallback, family, extra_t)

        try:
            if pat.get("buckets"):  # symbolic sizes: one binding per size, by bucket
                return BucketedBinding(pat, input_names, types, make, fallback, family)
            return make(pat, types)
        except ValueError as exc:
            raise ArtifactError(f"pattern {pat['id']}: {exc}") from exc

    # -------------------------------------------------------------- running
    def forward(self, *inputs: torch.Tensor) -> Any:
        if len(inputs) != len(self.input_names):
            raise TypeError(f"expected {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        env: dict[str, Any] = dict(zip(self.input_names, inputs))
        if self._symbol_sources:
            env[_SYMBOLS] = read_symbols(self._symbol_sources, inputs)
        for name in self._param_names:
            env[name] = getattr(self, name)
        for step in self._steps:
            step.run(env)
        outs = [_resolve(_decode(o), env) for o in self.graph["outputs"]]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def aten_nodes(self) -> list[str]:
        """Names of the graph nodes this module runs as ATen ops, in order (the nodes of
        cutlass patterns are absent, unless a value they produce is read outside them)."""
        return [s.name for s in self._steps if isinstance(s, _AtenNode)]

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


def load_graph_module(graph: dict, model: torch.nn.Module | None = None,
                      artifact_dir: str | None = None) -> FactModule:
    """A graph dict alone (no kernels) as a module that runs every node as ATen."""
    return FactModule(graph, _param_values(graph, model, artifact_dir))


def load(artifact_dir: str | os.PathLike, model: torch.nn.Module | None = None) -> FactModule:
    """Load ``artifact_dir`` (manifest.json, graph.json, libfact_kernels.so) as a module.

    Args:
        artifact_dir: what ``factc compose`` wrote.
        model: the module the graph was exported from; its parameters and buffers are used
            (by state-dict target). Without it, ``artifact_dir/params.pt`` must hold them.

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
    if any(p.get("impl") == "cutlass" for p in manifest.get("patterns", [])):
        lib_path = os.path.join(artifact_dir, manifest.get("library", "libfact_kernels.so"))
        if not os.path.isfile(lib_path):
            raise ArtifactError(f"{lib_path}: missing (the manifest has cutlass patterns)")
        library = KernelLibrary(os.path.abspath(lib_path))
    params = _param_values(graph, model, artifact_dir)
    module = FactModule(graph, params, manifest, library)
    module.artifact_dir = artifact_dir
    return module
