"""Narrowed values in the runtime (docs/05-composition.md, "Narrowed values").

Under a policy whose GEMMs and attention round their fp32 operands to bf16 (``bf16``), the
engine marks the graph values whose every reader rounds them anyway as *narrowed*: the
manifest's ``"narrowed": [{"value": "linear", "dtype": "bfloat16"}, ...]``. Such a value is
stored in the narrow dtype, which is bit-identical to rounding it in each reader and halves
its traffic. The graph's own types still say float32 for it; the kernels' problems already
carry the narrow dtypes.

The module built from such an artifact keeps every tensor type-correct:

- the runtime's value types (what a kernel binding expects, allocates and fakes) give a
  narrowed value its narrow dtype (:func:`stored_types`; shape and strides unchanged);
- a narrowed parameter, buffer or constant is converted once when the module is built
  (:func:`convert`, the load-time tensor ``fact_bf16_<name>``), and every reader in the
  generated module reads the converted tensor;
- an ATen node that only moves or re-views data (:data:`LAYOUT_OPS`) and whose outputs are
  stored like its source runs on the stored tensor as it is; a node that reads only shapes
  (:data:`SHAPE_OPS`) reads it as it is too (:func:`keeps_stored`); every other ATen node
  reads a narrowed value cast back to its graph dtype (exact) and casts a narrowed output
  of its own to the narrow dtype; a kernel call reads and writes narrowed tensors as they
  are; the module's outputs are never narrowed;
- an ATen ``linear`` whose input and weight are both narrowed (a GEMM pattern the vendor
  path won, run as its ATen op) reads them as they are and accumulates in fp32 with an
  fp32 result (:func:`narrowed_linear`): the bf16 GEMM the tuning measured, not an fp32
  one on cast-back copies;
- a kernel's ATen fallback obeys the same rule (:func:`narrowed_fallback` for a family's own
  fallback), so it returns a narrowed output in its narrow dtype.

Tests: ``tests/python/test_narrowing.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx

from fact.manifest import NARROW_DTYPES

__all__ = ["NARROW_DTYPES", "LAYOUT_OPS", "SHAPE_OPS", "Narrowed", "NarrowingBuilder", "narrowed_values",
           "stored_types", "keeps_stored", "convert", "dtype_tag", "converted_name",
           "narrowed_fallback", "narrowed_summary", "narrowed_linear", "is_narrowed_linear"]


#: ATen ops (base names) whose outputs are their first argument's elements re-viewed or moved,
#: never computed: rounding commutes with them. The views are those of the engine's canonical
#: form (``canonical::is_view_op``), then the ops that may copy but only move data.
LAYOUT_OPS = frozenset((
    "alias", "detach", "view", "_unsafe_view", "expand", "expand_as", "t", "transpose",
    "permute", "slice", "select", "unsqueeze", "squeeze", "split", "split_with_sizes", "chunk",
    "unbind", "narrow", "as_strided", "diagonal", "unfold", "view_as", "unflatten", "movedim",
    "reshape", "flatten", "contiguous", "clone"))

#: ATen ops (base names) that read only a tensor's sizes or strides.
SHAPE_OPS = frozenset(("sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size",
                       "stride", "numel", "dim"))

_TAGS = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


@dataclass(frozen=True)
class Narrowed:
    """A value stored in a narrower dtype than its graph type says.

    Attributes:
        dtype: the dtype it is stored in (``torch.bfloat16`` or ``torch.float16``).
        graph_dtype: its graph type's dtype (``torch.float32``).
    """

    dtype: torch.dtype
    graph_dtype: torch.dtype


def dtype_tag(dtype: torch.dtype) -> str:
    """The short name of a dtype in generated names: ``bf16``, ``f16``, ``f32``."""
    return _TAGS.get(dtype, str(dtype).replace("torch.", ""))


def converted_name(value: str, narrowed: Narrowed) -> str:
    """The load-time tensor a narrowed parameter is converted into: ``fact_bf16_<value>``."""
    return f"fact_{dtype_tag(narrowed.dtype)}_{value}"


class NarrowingBuilder:
    """The narrowing part of :class:`fact.module_gen.ModuleBuilder` (which it is a base of:
    it uses the builder's ``graph``, ``value``, ``load_time_tensor`` and value table).

    Attributes:
        narrowed: value -> :class:`Narrowed`; each such value is held in its narrow dtype
            wherever the builder defines it.
    """

    graph: torch.fx.Graph
    _values: dict[str, torch.fx.Node]
    value: Callable[[str], torch.fx.Node]
    load_time_tensor: Callable[..., torch.fx.Node]

    def _init_narrowing(self, narrowed: Mapping[str, Narrowed] | None) -> None:
        self.narrowed: dict[str, Narrowed] = dict(narrowed or {})
        self._widened: dict[str, torch.fx.Node] = {}  # narrowed value -> cast back, made once
        self._converted: dict[str, str] = {}  # narrowed parameter -> its load-time tensor

    def cast(self, node: torch.fx.Node, value: str, dtype: torch.dtype) -> torch.fx.Node:
        """``<value>_<dtype tag> = node.to(dtype)`` in the graph being written."""
        return self.graph.create_node("call_method", "to", (node, dtype), {},
                                      name=f"{value}_{dtype_tag(dtype)}")

    def widened(self, name: str) -> torch.fx.Node:
        """Graph value ``name`` in its graph dtype: its FX node, or for a narrowed value that
        node cast back (``linear_f32 = linear.to(torch.float32)``, exact), made once."""
        n = self.narrowed.get(name)
        if n is None:
            return self.value(name)
        if name not in self._widened:
            self._widened[name] = self.cast(self.value(name), name, n.graph_dtype)
        return self._widened[name]

    def convert_at_load(self, name: str) -> torch.fx.Node:
        """Narrowed parameter ``name`` converted once at load (:func:`convert`, as
        :func:`converted_name`): from here on graph value ``name`` is the converted tensor,
        for every reader and as a source of later load-time tensors."""
        n = self.narrowed[name]
        target = converted_name(name, n)
        node = self.load_time_tensor(target, convert(n.dtype), [name])
        self._values[name] = node
        self._converted[name] = target
        return node

    def narrowed_linear_node(self, node: Mapping, decode: Callable[[Any], Any]) -> bool:
        """Emit graph ``node`` as :func:`narrowed_linear` when it is an ATen ``linear`` of two
        narrowed operands (:func:`is_narrowed_linear`; ``decode`` reads its JSON arguments):
        the operands as stored, the bias cast back, a narrowed output cast. False, emitting
        nothing, for any other node."""
        if not is_narrowed_linear(node, self.narrowed):
            return False
        reads = [self.value, self.value] + [self.widened] * max(0, len(node["args"]) - 2)
        args = tuple(self._arg(decode(a), r) for a, r in zip(node["args"], reads))  # type: ignore[attr-defined]
        kwargs = {k: self._arg(decode(v), self.widened) for k, v in node["kwargs"].items()}  # type: ignore[attr-defined]
        value = self.graph.create_node("call_function", narrowed_linear, args, kwargs, name=node["name"])
        n = self.narrowed.get(node["name"])
        if n is not None:
            value = self.cast(value, node["name"], n.dtype)
        self.define(node["name"], value)  # type: ignore[attr-defined]
        return True

    def converted_sources(self, sources: Sequence[str]) -> list[str]:
        """Load-time sources with each narrowed parameter replaced by its converted tensor."""
        return [self._converted.get(s, s) for s in sources]


def narrowed_values(graph: Mapping, entries: Sequence[Mapping] | None) -> dict[str, Narrowed]:
    """The manifest's ``"narrowed"`` entries (already of the right shape,
    :func:`fact.manifest.check_manifest`) checked against ``graph``: value -> :class:`Narrowed`.

    Raises:
        ValueError: a value that is not in the graph, is a graph input or output, or whose
            graph dtype is not float32; the message names the entry.
    """
    types: dict[str, Any] = {p["name"]: p.get("type") for p in graph.get("params", [])}
    for n in graph.get("nodes", []):
        for o in n["outputs"]:
            types[o["name"]] = o.get("type")
    inputs = {i["name"] for i in graph.get("inputs", [])}
    outputs = {r for o in graph.get("outputs", []) for r in _refs(o)}
    out: dict[str, Narrowed] = {}
    for i, e in enumerate(entries or []):
        value, where = e["value"], f"narrowed[{i}] ({e['value']!r})"
        if value in inputs:
            raise ValueError(f"{where}: a graph input cannot be narrowed (the caller gives it)")
        if value in outputs:
            raise ValueError(f"{where}: a graph output cannot be narrowed (the module returns "
                             f"it in its graph dtype)")
        if value not in types:
            raise ValueError(f"{where}: no such value in the graph")
        dtype = (types[value] or {}).get("dtype")
        if dtype != "float32":
            raise ValueError(f"{where}: its graph dtype is {dtype}, only float32 values are "
                             f"narrowed")
        out[value] = Narrowed(getattr(torch, e["dtype"]), torch.float32)
    return out


def _refs(arg: Any) -> list[str]:
    if isinstance(arg, list):
        return [r for a in arg for r in _refs(a)]
    if isinstance(arg, dict) and isinstance(arg.get("ref"), str):
        return [arg["ref"]]
    return []


def stored_types(types: Mapping[str, Any], narrowed: Mapping[str, Narrowed]) -> dict[str, Any]:
    """``types`` (value -> graph type) with each narrowed value's dtype its narrow one (shape
    and strides unchanged)."""
    out = dict(types)
    for value, n in narrowed.items():
        if out.get(value) is not None:
            out[value] = dict(out[value], dtype=str(n.dtype).replace("torch.", ""))
    return out


def _base_name(op: str) -> str:
    parts = op.split(".")
    return ".".join(parts[1:-1]) if len(parts) >= 3 else op


def is_narrowed_linear(node: Mapping, narrowed: Mapping[str, Narrowed]) -> bool:
    """Whether graph ``node`` is ``aten.linear`` whose input and weight are narrowed to one
    dtype (then :func:`narrowed_linear` runs it)."""
    if _base_name(node["op"]) != "linear" or len(node.get("args") or []) < 2:
        return False
    x, w = _refs(node["args"][0]), _refs(node["args"][1])
    if len(x) != 1 or len(w) != 1 or x[0] not in narrowed or w[0] not in narrowed:
        return False
    return narrowed[x[0]].dtype == narrowed[w[0]].dtype


def narrowed_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` of bf16/fp16 ``x`` [..., K] and ``weight`` [N, K] as the
    bf16 policy computes it: the stored operands, fp32 accumulation, an fp32 result
    [..., N] (``torch.mm(..., out_dtype=torch.float32)``, cuBLAS; on a CPU, fp32 arithmetic
    on the same values), then the fp32 ``bias`` added."""
    x2 = x.reshape(-1, x.shape[-1])
    if x.is_cuda:
        y = torch.mm(x2, weight.t(), out_dtype=torch.float32)
    else:
        y = torch.mm(x2.float(), weight.t().float())
    y = y.reshape(*x.shape[:-1], weight.shape[0])
    return y if bias is None else y + bias


def keeps_stored(node: Mapping, narrowed: Mapping[str, Narrowed]) -> bool:
    """Whether graph ``node`` runs on the stored tensors as they are: it reads only shapes
    (:data:`SHAPE_OPS`), or it is a layout op (:data:`LAYOUT_OPS`) each of whose outputs is
    stored like its first argument (both narrowed to one dtype, or neither). Any other node
    reads narrowed values cast back to their graph dtype and casts its narrowed outputs."""
    base = _base_name(node["op"])
    if base in SHAPE_OPS:
        return True
    # view.dtype reinterprets the bytes: never run on a tensor stored in another dtype.
    if base not in LAYOUT_OPS or not node.get("args") or node["op"] == "aten.view.dtype":
        return False
    src = _refs(node["args"][0])
    if len(src) != 1:
        return False

    def stored(v: str) -> torch.dtype | None:
        return narrowed[v].dtype if v in narrowed else None

    return all(stored(o["name"]) == stored(src[0]) for o in node["outputs"])


def convert(dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    """``compute(t)``: ``t`` converted to ``dtype`` once, outside autograd, with its strides
    (a load-time tensor, :meth:`fact.module_gen.ModuleBuilder.convert_at_load`)."""
    def compute(t: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return t.detach().to(dtype, memory_format=torch.preserve_format, copy=True)
    return compute


def narrowed_fallback(fallback: Callable[[Sequence[torch.Tensor]], Any],
                      stored_in: Sequence[str | None], graph_in: Sequence[str | None],
                      stored_out: str, graph_out: str) -> Callable[[Sequence[torch.Tensor]], Any]:
    """A family's own ATen fallback (:class:`fact.families.KernelIO`'s, written for the graph
    dtypes) under the narrowing rule: each input whose stored dtype differs from its graph
    dtype is cast back to it first, and the result is cast to the stored dtype of the output
    when that differs. ``fallback`` itself when nothing differs. Dtypes are graph names."""
    widen = [(i, getattr(torch, g)) for i, (s, g) in enumerate(zip(stored_in, graph_in))
             if s is not None and g is not None and s != g]
    narrow = getattr(torch, stored_out) if stored_out != graph_out else None
    if not widen and narrow is None:
        return fallback

    def run(inputs: Sequence[torch.Tensor]) -> Any:
        tensors = list(inputs)
        for i, dtype in widen:
            tensors[i] = tensors[i].to(dtype)
        out = fallback(tensors)
        return out.to(narrow) if narrow is not None else out
    return run


def narrowed_summary(manifest: Mapping, graph: Mapping | None = None) -> str:
    """One line on the manifest's narrowed values, "" without any: ``stored in bf16: 12 values
    (4 parameters converted at load)``, one clause per dtype; the parameters (also buffers and
    constants) are counted when ``graph`` is given."""
    entries = [e for e in manifest.get("narrowed") or [] if isinstance(e, Mapping)]
    if not entries:
        return ""
    params = {p["name"] for p in (graph or {}).get("params", [])}
    parts = []
    for name in NARROW_DTYPES:
        values = [e.get("value") for e in entries if e.get("dtype") == name]
        if not values:
            continue
        text = f"{dtype_tag(getattr(torch, name))}: {len(values)} value{'s' if len(values) != 1 else ''}"
        if graph is not None:
            n = sum(v in params for v in values)
            text += f" ({n} parameter{'s' if n != 1 else ''} converted at load)"
        parts.append(text)
    return "stored in " + "; in ".join(parts)
