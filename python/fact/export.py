"""Export an ``nn.Module`` to a FACT graph (JSON, version 1, or 2 with symbols; docs/02-graph-format.md).

The graph is what ``torch.export.export(model, inputs)`` gives, *without* decompositions,
so it keeps ``aten.linear``, ``aten.matmul``, ``aten.softmax``, ``aten.split``, ... which the
engine's rules recognise. ``operator.getitem`` nodes are folded away: a node whose result is
a tuple or list has one output per element, named ``<node>.<i>``.

Nodes whose results nothing needs (no graph output, no buffer mutation, no side-effecting
node) are left out. A buffer or constant whose contents fall in a recognised *value class*
records it (``"value": "tril"``, see :func:`value_class`), so that rules can rely on what
it holds (a causal mask) without the graph carrying the tensor.

A dimension exported as dynamic (``dynamic_shapes`` with ``torch.export.Dim``, or a
program Dynamo traced with symbolic sizes) stays a symbol: the graph is version 2, with a
``"symbols"`` object and sizes, strides and size arguments that are monomials in the
symbols (``"512*B"``; :mod:`fact.symbols`). ``aten.sym_size`` and the integer arithmetic
on sizes are folded into those expressions. Anything else the format cannot express
(higher-order ops, non-tensor node results, unknown dtypes, a size that is not a product of
symbols and integers) raises :class:`ExportError` naming the offending node or value.
"""

from __future__ import annotations

import json
import math
import operator
import os
import warnings
from typing import Any, Iterable, Mapping, Sequence

import torch
import torch.fx

from fact.export_regions import RegionError, inline_regions
from fact.symbols import format_size

__all__ = ["ExportError", "DTYPE_NAMES", "VALUE_CLASSES", "export", "export_program",
           "graph_from_program", "write_graph", "tensor_type", "value_class", "value_types"]

GRAPH_FORMAT = "fact.graph"
GRAPH_VERSION = 1
#: The version of a graph with symbols (docs/02, "Symbols"); readers take 1 and 2.
SYMBOLIC_GRAPH_VERSION = 2
GRAPH_VERSIONS = (GRAPH_VERSION, SYMBOLIC_GRAPH_VERSION)

#: torch dtypes the graph format can name, mapped to the names it uses.
DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}

# InputKind names of torch.export's graph signature -> FACT "kind" of a lifted value.
_LIFTED_KINDS = {
    "PARAMETER": "parameter",
    "BUFFER": "buffer",
    "CONSTANT_TENSOR": "constant",
}


#: Value classes a buffer or constant may record (docs/02-graph-format.md).
VALUE_CLASSES = ("tril",)

# Tensors larger than this are not inspected for a value class (the check stays cheap).
_VALUE_CLASS_MAX_ELEMENTS = 1 << 26


class ExportError(RuntimeError):
    """The model cannot be expressed as a FACT graph; the message names what and where."""


def export_program(model: torch.nn.Module, example_inputs: Sequence[Any],
                   dynamic_shapes: Any = None) -> torch.export.ExportedProgram:
    """Run ``torch.export.export(model, tuple(example_inputs), dynamic_shapes=...)`` (no
    decompositions), functionalized when it holds in-place ops (:func:`functionalized`).

    Raises:
        ExportError: torch.export itself failed (the original error is chained).
    """
    try:
        ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes)
        return functionalized(ep)
    except Exception as exc:  # torch raises many types; report them uniformly
        raise ExportError(f"torch.export.export failed for {type(model).__name__}: "
                          f"{type(exc).__name__}: {exc}") from exc


def in_place_ops(ep: torch.export.ExportedProgram) -> list[str]:
    """The mutable ATen ops (``aten.add_.Tensor``, ``aten.relu_.default``) an exported
    program calls, sorted, each once."""
    return sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"
                   and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable})


def functionalized(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``ep`` without in-place ops: unchanged when it has none, else
    ``ep.run_decompositions({})`` (functionalization and no decomposition: ``out += x`` on
    an intermediate becomes ``aten.add``, ``relu_`` ``aten.relu``, ``linear`` stays
    ``linear``; a dropout it meets becomes the ``clone`` the canonical form drops). A write
    to a user input, parameter or buffer stays visible as a mutation output of the graph
    signature (``BUFFER_MUTATION``, ``USER_INPUT_MUTATION``), which the graph readers and
    the backend refuse."""
    if not in_place_ops(ep):
        return ep
    with warnings.catch_warnings():  # torch 2.11's own pytree deprecation, said at every call
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        return ep.run_decompositions({})


def export(model: torch.nn.Module, example_inputs: Sequence[Any],
           dynamic_shapes: Sequence[Mapping[int, Any] | None] | None = None,
           buckets: Mapping[str, Sequence[int]] | None = None) -> dict:
    """Export ``model`` called on ``example_inputs`` as a FACT graph dict.

    Args:
        model: any module ``torch.export`` accepts; it may live on CPU, CUDA or meta.
        example_inputs: positional inputs, in call order (tensors).
        dynamic_shapes: as ``torch.export.export`` takes it, one entry per input (``{0:
            torch.export.Dim("B", max=4096)}``); a dim marked so stays a symbol named
            after its ``Dim``, with the Dim's range and the example's size as the size seen.
        buckets: symbol name -> bucket upper bounds realization tunes (docs/04,
            "Buckets"); a symbol left out gets powers of two.

    Returns:
        The graph as a JSON-ready dict (``format``, ``version``, ``name``, [``symbols``,]
        ``inputs``, ``params``, ``nodes``, ``outputs``), exactly as docs/02 describes.

    Raises:
        ExportError: torch.export failed, or the program uses something the format
            cannot express (a higher-order op, a non-tensor result, ...), or ``buckets``
            names a symbol the graph does not have.
    """
    ep = export_program(model, example_inputs, dynamic_shapes)
    names: dict[str, str] = {}
    user = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    for i, spec in enumerate(dynamic_shapes or ()):
        for dim, d in (spec or {}).items():
            val = placeholders[user[i]].meta.get("val") if i < len(user) else None
            size = val.shape[dim] if isinstance(val, torch.Tensor) else None
            if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol and hasattr(d, "__name__"):
                names[str(size.node.expr)] = d.__name__
    return graph_from_program(ep, name=type(model).__name__, symbol_names=names,
                              buckets=buckets)


def write_graph(graph: dict, path: str | os.PathLike) -> None:
    """Write a graph dict as JSON to ``path`` (parent folders are created)."""
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(graph, f, indent=1, allow_nan=False)
        f.write("\n")


# --------------------------------------------------------------------------- types

def _finite(bound: Any) -> int | None:
    """A range bound as an int; None for an infinite one (torch's ``int_oo``)."""
    try:
        value = int(bound)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return value if value < 1 << 62 else None


class _Symbols:
    """The symbols met while converting one program: torch's symbol name -> the graph's
    name (a ``Dim``'s name, else torch's), with its range and hint."""

    def __init__(self, names: Mapping[str, str] | None = None) -> None:
        self.names = dict(names or {})
        self.found: dict[str, dict] = {}  # graph name -> {"min", "max", "seen"}

    def size(self, value: Any, what: str) -> int | str:
        """An int, or a SymInt as its monomial text (``"512*B"``)."""
        if not isinstance(value, torch.SymInt):
            return int(value)
        expr = value.node.expr
        if expr.is_number:
            return int(expr)
        coeff, rest = expr.as_coeff_Mul()
        powers = rest.as_powers_dict()
        if not (coeff.is_Integer and int(coeff) >= 1
                and all(s.is_Symbol and p.is_Integer and int(p) >= 1 for s, p in powers.items())):
            raise ExportError(f"{what} is {expr}, which is not a product of symbols and "
                              f"integers (docs/02, \"Symbols\")")
        factors: dict[str, int] = {}
        for sym, power in powers.items():
            factors[self._declare(sym, value, what)] = int(power)
        return format_size(int(coeff), factors)

    def _declare(self, sym: Any, value: torch.SymInt, what: str) -> str:
        name = self.names.setdefault(str(sym), str(sym))
        if name not in self.found:
            shape_env = value.node.shape_env
            vr = shape_env.var_to_range.get(sym)
            hints = getattr(shape_env, "backed_var_to_val", None)  # torch >= 2.11's name
            hint = (hints if hints is not None else shape_env.var_to_val).get(sym)
            if hint is None:
                raise ExportError(f"{what}: symbol {sym} has no example size (unbacked sizes "
                                  f"are not supported)")
            self.found[name] = {
                "min": max(1, int(vr.lower)) if vr is not None else 1,
                "max": _finite(vr.upper) if vr is not None else None,
                "seen": [int(hint)], "buckets": None}
        return name


def _static_int(value: Any, what: str) -> int:
    if isinstance(value, torch.SymInt):
        raise ExportError(f"{what} is symbolic ({value}); FACT graphs need static shapes "
                          f"(export without dynamic_shapes)")
    return int(value)


def tensor_type(val: Any, where: str, symbols: _Symbols | None = None) -> dict:
    """The FACT ``type`` of a tensor: ``{"dtype", "shape", "strides"}`` (strides in elements;
    with ``symbols``, a symbolic size or stride is its monomial text).

    Raises:
        ExportError: ``val`` is not a tensor, its dtype has no FACT name, or a size or
            stride is symbolic (without ``symbols``) or not a monomial. ``where`` names the
            value in the message.
    """
    if not isinstance(val, torch.Tensor):
        raise ExportError(f"{where}: expected a tensor, got {type(val).__name__} ({val!r}); "
                          f"FACT graphs carry tensor values only")
    if val.dtype not in DTYPE_NAMES:
        raise ExportError(f"{where}: dtype {val.dtype} is not supported by the FACT graph "
                          f"format (supported: {', '.join(DTYPE_NAMES.values())})")
    if val.layout != torch.strided:
        raise ExportError(f"{where}: layout {val.layout} is not supported (strided only)")
    conv = symbols.size if symbols is not None else _static_int
    shape = [conv(s, f"{where}: size {i}") for i, s in enumerate(val.shape)]
    strides = [conv(s, f"{where}: stride {i}") for i, s in enumerate(val.stride())]
    return {"dtype": DTYPE_NAMES[val.dtype], "shape": shape, "strides": strides}


def value_class(val: Any) -> str | None:
    """The value class of a buffer's or constant's contents, or None.

    ``"tril"``: a bool, integer or floating tensor of rank >= 2 whose leading dims all have
    size 1 and whose last two dims ``[R, C]`` equal ``torch.tril(torch.ones(R, C))``
    exactly: element ``(i, j)`` is 1 (True) iff ``j <= i``, 0 (False) elsewhere. minGPT's
    ``torch.tril(torch.ones(T, T)).view(1, 1, T, T)`` causal-mask buffer is one.

    Tensors without data (meta or fake tensors), of more than 2**26 elements, or of any
    other contents give None. Never raises for a tensor input; a non-tensor gives None.
    """
    if not isinstance(val, torch.Tensor) or val.layout != torch.strided:
        return None
    if val.device.type == "meta" or isinstance(val, torch._subclasses.FakeTensor):
        return None
    if val.dim() < 2 or val.numel() > _VALUE_CLASS_MAX_ELEMENTS or val.is_complex():
        return None
    if any(s != 1 for s in val.shape[:-2]):
        return None
    rows, cols = val.shape[-2], val.shape[-1]
    tril = torch.ones(rows, cols, dtype=torch.bool, device=val.device).tril()
    with torch.no_grad():
        if torch.equal(val.reshape(rows, cols), tril.to(val.dtype)):
            return "tril"
    return None


def _lifted_value(ep: torch.export.ExportedProgram, target: str) -> Any:
    """The tensor a lifted buffer or constant holds (None when the program has none)."""
    if target in ep.constants:
        return ep.constants[target]
    return ep.state_dict.get(target)


def _live_nodes(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """Nodes some graph output (buffer mutations included) or side-effecting node needs."""
    roots = [n for n in graph.nodes
             if n.op == "output" or (n.op == "call_function" and n.is_impure())]
    live: set[torch.fx.Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in live:
            continue
        live.add(n)
        stack.extend(n.all_input_nodes)
    return live


# ------------------------------------------------------------------------ arguments

def _encode_float(x: float) -> Any:
    if math.isnan(x):
        return {"float": "nan"}
    if math.isinf(x):
        return {"float": "inf" if x > 0 else "-inf"}
    return float(x)


def _encode_arg(arg: Any, refs: dict[str, str], where: str,
                symbols: _Symbols | None = None) -> Any:
    """Encode one FX argument as a FACT argument value (docs/02, "Argument values"); a
    size computed from symbols is ``{"sym": "4*B"}``."""
    if symbols is not None and (isinstance(arg, torch.SymInt) or (
            isinstance(arg, torch.fx.Node) and isinstance(arg.meta.get("val"), torch.SymInt))):
        size = symbols.size(arg.meta["val"] if isinstance(arg, torch.fx.Node) else arg, where)
        return {"sym": size} if isinstance(size, str) else size
    if isinstance(arg, (list, tuple)):
        return [_encode_arg(a, refs, where, symbols) for a in arg]
    if isinstance(arg, torch.fx.Node):
        if arg.name not in refs:
            raise ExportError(f"{where}: refers to {arg.name}, which is not a tensor value "
                              f"of the graph")
        return {"ref": refs[arg.name]}
    if arg is None or isinstance(arg, (bool, str)):
        return arg
    if isinstance(arg, int):
        return int(arg)
    if isinstance(arg, float):
        return _encode_float(arg)
    if isinstance(arg, torch.dtype):
        if arg not in DTYPE_NAMES:
            raise ExportError(f"{where}: dtype argument {arg} is not supported")
        return {"dtype": DTYPE_NAMES[arg]}
    if isinstance(arg, torch.device):
        return {"device": str(arg)}
    if isinstance(arg, torch.layout):
        return {"layout": str(arg).removeprefix("torch.")}
    if isinstance(arg, torch.memory_format):
        return {"memory_format": str(arg).removeprefix("torch.")}
    if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise ExportError(f"{where}: argument {arg} is symbolic; FACT graphs need static "
                          f"shapes")
    raise ExportError(f"{where}: cannot encode argument of type {type(arg).__name__} "
                      f"({arg!r})")


# --------------------------------------------------------------------------- graph

def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        kind = ("higher-order op" if isinstance(target, torch._ops.HigherOrderOperator)
                else "Python callable")
        raise ExportError(f"node {node.name}: {kind} {target!r} is not supported; FACT graphs "
                          f"hold ATen OpOverloads only")
    return str(target)  # "aten.linear.default"


def _node_outputs(node: torch.fx.Node, symbols: _Symbols | None = None) -> list[dict]:
    val = node.meta.get("val")
    where = f"node {node.name} ({node.target})"
    if val is None:
        return []  # e.g. aten._assert_tensor_metadata: no result
    if isinstance(val, (list, tuple)):
        outs = []
        for i, v in enumerate(val):
            name = f"{node.name}.{i}"
            outs.append({"name": name, "type": None if v is None
                         else tensor_type(v, f"{where} output {i}", symbols)})
        return outs
    return [{"name": node.name, "type": tensor_type(val, where, symbols)}]


_SYM_TYPES = (torch.SymInt, torch.SymBool, torch.SymFloat)


def _is_size_node(node: torch.fx.Node) -> bool:
    """A node computing a size or a predicate on sizes (``aten.sym_size.int``,
    ``operator.mul`` on SymInts, ...), or an assertion on one: folded into expressions."""
    if isinstance(node.meta.get("val"), _SYM_TYPES):
        return True
    return (node.target in (torch.ops.aten._assert_scalar.default,
                            torch.ops.aten.sym_constrain_range_for_size.default)
            and any(isinstance(a.meta.get("val"), _SYM_TYPES) for a in node.all_input_nodes))


def _fold_getitem(node: torch.fx.Node, refs: dict[str, str]) -> None:
    src, index = node.args
    if not isinstance(src, torch.fx.Node) or src.op != "call_function" \
            or not isinstance(src.meta.get("val"), (list, tuple)):
        raise ExportError(f"node {node.name}: getitem of {src} is not an element of a "
                          f"multi-output ATen node")
    n = len(src.meta["val"])
    if not isinstance(index, int) or not -n <= index < n:
        raise ExportError(f"node {node.name}: getitem index {index!r} out of range for "
                          f"{src.name} with {n} outputs")
    if src.meta["val"][index % n] is None:
        raise ExportError(f"node {node.name}: element {index} of {src.name} is None")
    refs[node.name] = f"{src.name}.{index % n}"


def _lifted_inputs(ep: torch.export.ExportedProgram) -> tuple[dict[str, dict], set[str]]:
    """Placeholder name -> {"kind", "target"} for lifted values, and the user input names."""
    lifted: dict[str, dict] = {}
    user: set[str] = set()
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        name = getattr(spec.arg, "name", None)
        if kind == "USER_INPUT":
            if name is not None:
                user.add(name)
            continue
        if kind not in _LIFTED_KINDS:
            raise ExportError(f"input {name}: input kind {kind} is not supported")
        lifted[name] = {"kind": _LIFTED_KINDS[kind], "target": spec.target}
    return lifted, user


def _encode_output(value: Any, index: int, refs: dict) -> dict:
    """A user output as a tensor reference; anything else (an int, None, a string the model
    returns) is an ExportError naming the output, since a FACT graph returns tensors only."""
    encoded = _encode_arg(value, refs, f"graph output {index}")
    if not (isinstance(encoded, dict) and "ref" in encoded):
        raise ExportError(f"graph output {index}: the model returns {type(value).__name__} "
                          f"({value!r}), not a tensor; FACT graphs return tensors only "
                          f"(return the tensors and compute the rest outside the model)")
    return encoded


def _user_output_names(ep: torch.export.ExportedProgram, graph: torch.fx.Graph) -> list[Any]:
    """The graph's user outputs (buffer mutations and other side outputs are left out)."""
    out_node = next(n for n in graph.nodes if n.op == "output")
    values = list(out_node.args[0])
    kinds = [spec.kind.name for spec in ep.graph_signature.output_specs]
    if len(kinds) != len(values):
        return values
    return [v for v, k in zip(values, kinds) if k == "USER_OUTPUT"]


def graph_from_program(ep: torch.export.ExportedProgram, name: str = "Model",
                       symbol_names: Mapping[str, str] | None = None,
                       buckets: Mapping[str, Sequence[int]] | None = None) -> dict:
    """Convert an ``ExportedProgram`` to a FACT graph dict (see :func:`export`).

    ``symbol_names`` renames torch's symbols (``"s77"`` -> ``"B"``); ``buckets`` gives a
    symbol (by its graph name) its bucket upper bounds.

    Raises:
        ExportError: the program uses something the FACT format cannot express, or
            ``buckets`` names a symbol the graph does not have.
    """
    symbols = _Symbols(symbol_names)
    lifted, user_names = _lifted_inputs(ep)
    try:
        graph = inline_regions(ep)
    except RegionError as exc:
        raise ExportError(str(exc)) from None
    live = _live_nodes(graph)
    refs: dict[str, str] = {}  # FX node name -> FACT value name
    inputs: list[dict] = []
    params: list[dict] = []
    nodes: list[dict] = []
    for node in graph.nodes:
        if node.op == "placeholder":
            where = f"input {node.name}"
            if node.name in lifted:
                info = lifted[node.name]
                param = {"name": node.name, "kind": info["kind"], "target": info["target"],
                         "type": tensor_type(node.meta.get("val"), where, symbols)}
                if info["kind"] in ("buffer", "constant"):
                    cls = value_class(_lifted_value(ep, info["target"]))
                    if cls is not None:
                        param["value"] = cls
                params.append(param)
            elif node.name in user_names:
                val = node.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    raise ExportError(f"{where}: user input of type {type(val).__name__} is "
                                      f"not supported (tensors only)")
                inputs.append({"name": node.name, "kind": "user_input",
                               "type": tensor_type(val, where, symbols)})
            else:
                raise ExportError(f"{where}: placeholder not in the graph signature")
            refs[node.name] = node.name
        elif node.op == "call_function":
            if node not in live:
                continue
            if node.target is operator.getitem:
                _fold_getitem(node, refs)
                continue
            if _is_size_node(node):
                continue  # its value is an expression where it is used
            op = _op_name(node)
            where = f"node {node.name} ({op})"
            outputs = _node_outputs(node, symbols)
            args = [_encode_arg(a, refs, where, symbols) for a in node.args]
            kwargs = {k: _encode_arg(v, refs, where, symbols) for k, v in node.kwargs.items()}
            if len(outputs) == 1 and outputs[0]["name"] == node.name:
                refs[node.name] = node.name
            nodes.append({"name": node.name, "op": op, "args": args, "kwargs": kwargs,
                          "outputs": outputs})
        elif node.op == "output":
            continue
        else:
            raise ExportError(f"node {node.name}: FX op {node.op!r} ({node.target}) is not "
                              f"supported")
    outputs = [_encode_output(v, i, refs) for i, v in enumerate(_user_output_names(ep, graph))]
    for sym, bounds in (buckets or {}).items():
        if sym not in symbols.found:
            raise ExportError(f"buckets for {sym!r}: the graph has no such symbol (it has "
                              f"{', '.join(symbols.found) or 'none'})")
        symbols.found[sym]["buckets"] = [int(b) for b in bounds]
    doc = {"format": GRAPH_FORMAT, "version": GRAPH_VERSION, "name": name}
    if symbols.found:
        doc["version"] = SYMBOLIC_GRAPH_VERSION
        doc["symbols"] = symbols.found
    doc.update(inputs=inputs, params=params, nodes=nodes, outputs=outputs)
    return doc


def value_types(graph: dict) -> dict[str, dict | None]:
    """Every value name of a graph dict -> its ``type`` (inputs, params, node outputs)."""
    types: dict[str, dict | None] = {}
    for v in _iter_values(graph):
        types[v["name"]] = v["type"]
    return types


def _iter_values(graph: dict) -> Iterable[dict]:
    yield from graph["inputs"]
    yield from graph["params"]
    for node in graph["nodes"]:
        yield from node["outputs"]
