"""The generated module (docs/05-composition.md, "The generated module"): a FACT graph and the
kernel calls that replace its patterns, written as one ``torch.fx.GraphModule``.

:func:`generate` turns ``graph.json`` (docs/02) into an FX graph in which

- every node outside the kernels' patterns is a call of its ATen op
  (``aten.linear.default`` -> ``torch.ops.aten.linear.default``), its constant arguments
  (numbers, dtypes, devices, lists) written into the call;
- each FACT kernel is one call of its kernel module (``self.fact_p0(x, w, b)``, a
  :class:`KernelSite`), which the pattern's family emits (:meth:`fact.families.Family.emit`
  through a :class:`ModuleBuilder`: the default is that one call defining the pattern's
  output and extra outputs; a family may add views after it or read tensors it re-lays out
  once at load, :meth:`ModuleBuilder.load_time_tensor`);
- a pattern node whose value is read outside its kernel stays an ATen call (with the pattern
  nodes it reads); the others are gone;
- parameters, buffers and load-time tensors are placeholders after the graph's inputs;
- values the manifest narrows are held in their narrow dtype (:mod:`fact.narrowing`: a
  narrowed parameter converted at load, ATen nodes casting where the rule says);
- in a graph with symbols (docs/02, "Symbols"), a size argument ``{"sym": "4*B"}`` is
  computed per call: each symbol is read once from the input dim it is the size of
  (``x.size(0)``, divided by the dim's coefficient) and multiplied out, so the module runs
  every size of the symbol's range, and traces as symbolic under ``torch.compile``.

Calls are emitted in the graph's order, each kernel call at its output node, except where a
value it needs is not made yet (then as soon as it is: the result is a topological order of
the same computation). The GraphModule's ``code`` is readable Python; the module writes it
into the artifact (:meth:`fact.runtime.FactModule.write_source`). The same builder makes each
kernel's ATen fallback (:func:`generate_nodes`), so a graph node is turned into a call in one
place only.
"""

from __future__ import annotations

import heapq
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx

from fact.narrowing import Narrowed, NarrowingBuilder, keeps_stored
from fact.symbols import parse_size, symbol_sources

__all__ = ["GenerationError", "KernelSite", "ModuleBuilder", "generate", "generate_nodes",
           "resolve_op", "decode_arg", "refs_of", "Ref", "Sym", "node_inputs", "default_emit",
           "drop_identities", "symbol_dims"]


class GenerationError(ValueError):
    """The graph or a kernel site cannot be written as a module; the message names the
    node or value."""


class Ref:
    """A reference to a graph value inside a decoded argument."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.name}"


class Sym:
    """A size argument of a graph with symbols (``{"sym": "4*B"}``), computed per call."""

    __slots__ = ("size",)

    def __init__(self, size: str) -> None:
        self.size = size

    def __repr__(self) -> str:
        return f"sym({self.size})"


def symbol_dims(values: Sequence[tuple[str, Mapping | None]], symbols: Any = None
                ) -> dict[str, tuple[str, int, int]]:
    """Where each symbol's value is read per call: symbol -> ``(value name, dim,
    coefficient)`` for the first of ``values`` (name, graph type) with a dim of size
    ``coefficient * symbol`` (:func:`fact.symbols.symbol_sources`); ``symbols`` limits the
    names taken as symbols."""
    names = [n for n, _ in values]
    found = symbol_sources(names, [t for _, t in values], symbols)
    return {s: (names[i], d, c) for s, (i, d, c) in found.items()}


def resolve_op(name: str) -> Callable:
    """``"aten.linear.default"`` -> ``torch.ops.aten.linear.default``.

    Raises:
        GenerationError: no such operator or overload.
    """
    parts = name.split(".")
    if len(parts) < 3:
        raise GenerationError(f"op name {name!r} is not <namespace>.<op>.<overload>")
    ns, op, overload = parts[0], ".".join(parts[1:-1]), parts[-1]
    try:
        return getattr(getattr(getattr(torch.ops, ns), op), overload)
    except (AttributeError, RuntimeError) as exc:
        raise GenerationError(f"unknown operator {name}: {exc}") from exc


def decode_arg(arg: Any) -> Any:
    """A graph argument value (docs/02) as a Python/torch value; refs become :class:`Ref`.

    Raises:
        GenerationError: an object of a kind docs/02 does not define.
    """
    if isinstance(arg, list):
        return [decode_arg(a) for a in arg]
    if isinstance(arg, dict):
        if "ref" in arg:
            return Ref(arg["ref"])
        if "sym" in arg:
            return Sym(arg["sym"])
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
        raise GenerationError(f"cannot decode argument {arg!r}")
    return arg


def refs_of(arg: Any) -> list[str]:
    """The value names a decoded argument refers to, in order."""
    if isinstance(arg, Ref):
        return [arg.name]
    if isinstance(arg, list):
        return [r for a in arg for r in refs_of(a)]
    return []


def node_inputs(node: Mapping) -> list[str]:
    """The value names a graph node reads (its arguments', then its keyword arguments')."""
    return refs_of([decode_arg(a) for a in node["args"]]) + refs_of(
        [decode_arg(v) for v in node["kwargs"].values()])


def _rename(arg: Any, same: Mapping[str, str]) -> Any:
    """A graph argument (docs/02, encoded) with each ref to a key of ``same`` replaced."""
    if isinstance(arg, list):
        return [_rename(a, same) for a in arg]
    if isinstance(arg, dict) and "ref" in arg and arg["ref"] in same:
        return {"ref": same[arg["ref"]]}
    return arg


def drop_identities(graph: Mapping, dropped: Sequence[Mapping]) -> tuple[dict, list[str]]:
    """``graph`` without the nodes the canonical form dropped outside every pattern (the
    manifest's ``"dropped"``: ``node`` and ``same_as``, docs/05): a node whose output equals
    another value (a cast to its own dtype, dropout that does nothing, an alias) is gone and
    its readers read that value; a node with no ``same_as`` (an assertion) is gone when
    nothing reads its outputs.

    Returns:
        ``(graph, names of the nodes left out)``; ``graph`` is a new dict sharing the rest.

    Raises:
        GenerationError: an entry names a node the graph lacks, or one with several outputs.
    """
    nodes = {n["name"]: n for n in graph["nodes"]}
    same: dict[str, str] = {}  # value -> the value it equals
    identities: set[str] = set()
    for d in dropped:
        n = nodes.get(d["node"])
        if n is None:
            raise GenerationError(f"dropped node {d['node']} is not in the graph")
        if d.get("same_as"):
            outs = _outputs(n)
            if len(outs) != 1:
                raise GenerationError(f"dropped node {n['name']} has {len(outs)} outputs, "
                                      f"so it cannot equal {d['same_as']}")
            same[outs[0]] = d["same_as"]
            identities.add(n["name"])
    for k in same:  # a chain of identities reads its first value
        while same[k] in same:
            same[k] = same[same[k]]
    kept = [dict(n, args=_rename(n["args"], same),
                 kwargs={k: _rename(v, same) for k, v in n["kwargs"].items()})
            for n in graph["nodes"] if n["name"] not in identities]
    outputs = [_rename(o, same) for o in graph["outputs"]]
    read = {r for n in kept for r in node_inputs(n)} | {r for o in outputs
                                                        for r in refs_of(decode_arg(o))}
    unread = {d["node"] for d in dropped if not d.get("same_as")
              and not any(o in read for o in _outputs(nodes[d["node"]]))}
    kept = [n for n in kept if n["name"] not in unread]
    left = {n["name"] for n in kept}
    return dict(graph, nodes=kept, outputs=outputs), [n for n in nodes if n not in left]


def _outputs(node: Mapping) -> list[str]:
    return [o["name"] for o in node["outputs"]]


@dataclass
class KernelSite:
    """One FACT kernel of the module, as the generator places it.

    Attributes:
        target: the attribute of the kernel module (``fact_p0``): an ``nn.Module`` whose
            ``forward(*inputs)`` returns the output, or a list (output, extra outputs).
        module: that module.
        pattern: the manifest entry (``id``, ``nodes``, ``output``, ...).
        input_names: the graph values the call takes, in order.
        defines: the graph values the call makes: the output, then the extra outputs.
        emit: the family's emitter (:meth:`fact.families.Family.emit`), called with the
            builder and this site.
        load_time_inputs: input values to compute once at load when they depend only on
            constants of the export (:mod:`fact.load_time`; the rope tables).
    """

    target: str
    module: torch.nn.Module
    pattern: Mapping
    input_names: list[str]
    defines: list[str]
    emit: Callable[["ModuleBuilder", "KernelSite"], None]
    load_time_inputs: list[str] = field(default_factory=list)


@dataclass
class _Item:
    """A call to place: an ATen node or a kernel site, with what it reads and makes."""

    position: int
    reads: list[str]
    makes: list[str]
    node: Mapping | None = None
    site: KernelSite | None = None
    waiting: int = 0
    readers: list[int] = field(default_factory=list)


class ModuleBuilder(NarrowingBuilder):
    """The FX graph being written; what a family's emitter calls.

    Attributes:
        graph: the ``torch.fx.Graph``.
        modules: attribute -> module the graph calls (kernel modules).
        load_time: placeholder name -> (function, source value names) of the tensors made
            once at load (:meth:`load_time_tensor`).

    Args:
        placeholders: the module's inputs, in order.
        symbols: symbol -> (placeholder, dim, coefficient) it is read from (:func:`symbol_dims`),
            for a graph with symbols.
        narrowed: values stored narrower than their graph dtype (:mod:`fact.narrowing`),
            held so wherever defined; :meth:`aten_node` casts by the narrowing rule, and
            :class:`fact.narrowing.NarrowingBuilder` adds ``widened``, ``cast`` and
            ``convert_at_load``.
    """

    def __init__(self, placeholders: Sequence[str],
                 symbols: Mapping[str, tuple[str, int, int]] | None = None,
                 narrowed: Mapping[str, Narrowed] | None = None) -> None:
        self.graph = torch.fx.Graph()
        self.modules: dict[str, torch.nn.Module] = {}
        self.load_time: dict[str, tuple[Callable[..., torch.Tensor], list[str]]] = {}
        self._values: dict[str, torch.fx.Node] = {}
        self._init_narrowing(narrowed)
        self._symbols = dict(symbols or {})
        self._sizes: dict[str, Any] = {}  # size text -> its FX node, made once
        self._placeholder_tail: torch.fx.Node | None = None
        for name in placeholders:
            self._add_placeholder(name)

    def _add_placeholder(self, name: str) -> torch.fx.Node:
        # The argument's name: the value's, made an identifier (a tuple output "split.0"
        # becomes split_0, numbered on when that is taken); the value table keeps `name`.
        arg = name if name.isidentifier() else "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        taken = {n.target for n in self.graph.nodes if n.op == "placeholder"}
        base, i = arg, 1
        while arg in taken or (arg != name and arg in self._values):
            arg, i = f"{base}_{i}", i + 1
        if self._placeholder_tail is None:
            node = self.graph.placeholder(arg)
        else:  # after the other placeholders, whatever was emitted since
            with self.graph.inserting_after(self._placeholder_tail):
                node = self.graph.placeholder(arg)
        self._placeholder_tail = node
        self._values[name] = node
        return node

    # ------------------------------------------------------------------ values
    def has(self, name: str) -> bool:
        """Whether graph value ``name`` is defined so far."""
        return name in self._values

    def value(self, name: str) -> torch.fx.Node:
        """The FX node of graph value ``name``.

        Raises:
            GenerationError: the value is not defined (yet).
        """
        try:
            return self._values[name]
        except KeyError as exc:
            raise GenerationError(f"value {name} is used before it is made") from exc

    def define(self, name: str, node: torch.fx.Node) -> None:
        """Make FX ``node`` the value of graph value ``name``.

        Raises:
            GenerationError: ``name`` is defined already.
        """
        if name in self._values:
            raise GenerationError(f"value {name} is made twice")
        self._values[name] = node

    def size_value(self, size: str) -> Any:
        """The FX node of symbolic size ``size`` (``"4*B"``) in this call: each symbol read
        once from its input dim, then multiplied out; made once per size text.

        Raises:
            GenerationError: not a monomial, or a symbol no input dim gives.
        """
        if size in self._sizes:
            return self._sizes[size]
        parsed = parse_size(size)
        if parsed is None:
            raise GenerationError(f"size {size!r} is not a product of integers and symbols")
        coeff, powers = parsed
        out: Any = coeff if coeff != 1 else None
        for sym in sorted(powers):
            if sym not in self._sizes:
                if sym not in self._symbols:
                    raise GenerationError(f"size {size!r}: symbol {sym} is the size of no input dim")
                name, dim, c = self._symbols[sym]
                node = self.graph.call_method("size", (self.value(name), dim))
                self._sizes[sym] = node if c == 1 else self.call_function(operator.floordiv, (node, c))
            for _ in range(powers[sym]):
                v = self._sizes[sym]
                out = v if out is None else self.call_function(operator.mul, (out, v))
        self._sizes[size] = out
        return out

    def _arg(self, arg: Any, read: Callable[[str], torch.fx.Node] | None = None) -> Any:
        if isinstance(arg, Ref):
            return (read or self.value)(arg.name)
        if isinstance(arg, Sym):
            return self.size_value(arg.size)
        if isinstance(arg, list):
            return [self._arg(a, read) for a in arg]
        return arg

    # ------------------------------------------------------------------- calls
    def call_function(self, target: Callable, args: tuple, kwargs: Mapping | None = None,
                      name: str | None = None) -> torch.fx.Node:
        """A call of ``target`` (an op) on FX nodes and constants, named ``name``."""
        return self.graph.create_node("call_function", target, tuple(args), dict(kwargs or {}),
                                      name=name)

    def call_module(self, target: str, module: torch.nn.Module, inputs: Sequence[str],
                    name: str | None = None) -> torch.fx.Node:
        """A call ``self.<target>(*inputs)`` of ``module`` on graph values ``inputs``."""
        if self.modules.get(target, module) is not module:
            raise GenerationError(f"two modules named {target}")
        self.modules[target] = module
        return self.graph.create_node("call_module", target,
                                      tuple(self.value(n) for n in inputs), {}, name=name)

    def define_results(self, node: torch.fx.Node, names: Sequence[str]) -> None:
        """Define ``names`` from a call's result: ``node`` itself for one name, else its
        items ``node[i]``."""
        if len(names) == 1:
            self.define(names[0], node)
            return
        for i, name in enumerate(names):
            self.define(name, self.call_function(operator.getitem, (node, i), name=name))

    def aten_node(self, node: Mapping) -> None:
        """Emit graph ``node`` (docs/02) as a call of its ATen op, defining its outputs. Unless
        it runs on stored tensors as they are (:func:`fact.narrowing.keeps_stored`), it reads
        narrowed values cast back (:meth:`widened`) and casts its narrowed outputs."""
        if self.narrowed and self.narrowed_linear_node(node, decode_arg):
            return
        op = resolve_op(node["op"])
        keep = not self.narrowed or keeps_stored(node, self.narrowed)
        read = self.value if keep else self.widened
        args = tuple(self._arg(decode_arg(a), read) for a in node["args"])
        kwargs = {k: self._arg(decode_arg(v), read) for k, v in node["kwargs"].items()}
        outputs = _outputs(node)
        single = len(outputs) == 1 and outputs[0] == node["name"]
        call = self.call_function(op, args, kwargs, name=node["name"])
        for i, name in enumerate(outputs):
            value = call if single else self.call_function(operator.getitem, (call, i), name=name)
            n = None if keep else self.narrowed.get(name)
            if n is not None:
                value = self.cast(value, name, n.dtype)
            self.define(name, value)

    def kernel_call(self, site: KernelSite) -> torch.fx.Node:
        """The call of ``site``'s kernel module on its inputs (defines nothing)."""
        name = site.defines[0] if len(site.defines) == 1 else site.target
        return self.call_module(site.target, site.module, site.input_names, name=name)

    def load_time_tensor(self, name: str, compute: Callable[..., torch.Tensor],
                         sources: Sequence[str]) -> torch.fx.Node:
        """A tensor made once when the module is built, ``compute(*tensors of sources)``
        (e.g. Q/K/V weights concatenated, gate/up weights interleaved), passed to the module
        like a parameter under ``name``; defined as graph value ``name``. A narrowed parameter
        among ``sources`` is read converted (:meth:`convert_at_load`).

        Raises:
            GenerationError: ``name`` is taken.
        """
        if name in self._values:
            raise GenerationError(f"load-time tensor {name}: the name is taken")
        self.load_time[name] = (compute, self.converted_sources(sources))
        return self._add_placeholder(name)

    def finish(self, outputs: Sequence[Any]) -> torch.fx.GraphModule:
        """The GraphModule returning ``outputs`` (decoded graph outputs: one value, or a
        tuple of them), each in its graph dtype."""
        outs = [self._arg(o, self.widened) for o in outputs]
        self.graph.output(outs[0] if len(outs) == 1 else tuple(outs))
        self.graph.lint()
        return torch.fx.GraphModule(dict(self.modules), self.graph)


def _place(builder: ModuleBuilder, items: list[_Item]) -> list[str]:
    """Emit ``items`` in a topological order, each as early in graph order as what it reads
    allows (Kahn's algorithm over a heap of positions); returns the ATen nodes' names in the
    order emitted.

    Raises:
        GenerationError: a value no item makes (or a cycle), named.
    """
    makers: dict[str, int] = {}
    for i, item in enumerate(items):
        for v in item.makes:
            makers.setdefault(v, i)
    for i, item in enumerate(items):
        for v in dict.fromkeys(item.reads):
            if builder.has(v):
                continue
            if v not in makers:
                what = item.node["name"] if item.node else item.site.target
                raise GenerationError(f"{what} reads {v}, which no node makes")
            item.waiting += 1
            items[makers[v]].readers.append(i)
    ready = [(item.position, i) for i, item in enumerate(items) if item.waiting == 0]
    heapq.heapify(ready)
    done, aten = 0, []
    while ready:
        _, i = heapq.heappop(ready)
        item = items[i]
        if item.site is not None:
            item.site.emit(builder, item.site)
        else:
            builder.aten_node(item.node)
            aten.append(item.node["name"])
        done += 1
        for r in item.readers:
            items[r].waiting -= 1
            if items[r].waiting == 0:
                heapq.heappush(ready, (items[r].position, r))
    if done != len(items):
        stuck = [it.node["name"] if it.node else it.site.target for it in items if it.waiting]
        raise GenerationError(f"cannot order the calls of {', '.join(stuck)} (a cycle)")
    return aten


def _kept_members(site: KernelSite, nodes: Mapping[str, Mapping],
                  read_outside: set[str]) -> list[str]:
    """The pattern nodes of ``site`` that still run as ATen calls: those making a value read
    outside the kernel that the kernel does not make, and the pattern nodes they read."""
    members = [n for n in site.pattern["nodes"] if n in nodes]
    produced = {o: n for n in members for o in _outputs(nodes[n])}
    kept: set[str] = set()
    todo = [produced[v] for v in read_outside if v in produced and v not in site.defines]
    while todo:
        n = todo.pop()
        if n in kept:
            continue
        kept.add(n)
        todo.extend(produced[v] for v in node_inputs(nodes[n])
                    if v in produced and v not in site.defines)
    return [n for n in members if n in kept]


def generate(graph: Mapping, sites: Sequence[KernelSite], tensor_names: Sequence[str],
             narrowed: Mapping[str, Narrowed] | None = None
             ) -> tuple[torch.fx.GraphModule, list[str], dict]:
    """The module of ``graph`` with ``sites`` in place of their patterns.

    Args:
        graph: the graph dict (docs/02).
        sites: one per kernel; their patterns' nodes must be graph nodes, no node in two.
        tensor_names: the placeholders after the graph inputs (params, buffers, constants).
        narrowed: values stored narrower than their graph dtype (:mod:`fact.narrowing`).

    Returns:
        ``(module, aten_nodes, load_time)``: the GraphModule, whose ``forward`` takes the
        graph's inputs, then ``tensor_names``, then the load-time tensors' placeholders;
        the graph nodes it runs as ATen calls, in the order it runs them; and
        :attr:`ModuleBuilder.load_time`.

    Raises:
        GenerationError: a pattern names a node the graph lacks, or two patterns one node,
            or a value is read that nothing makes.
    """
    nodes = {n["name"]: n for n in graph["nodes"]}
    position = {name: i for i, name in enumerate(nodes)}
    producer = {o: name for name, n in nodes.items() for o in _outputs(n)}
    owner: dict[str, KernelSite] = {}
    for site in sites:
        for n in site.pattern["nodes"]:
            if n not in nodes:
                raise GenerationError(f"pattern {site.pattern['id']}: node {n} is not in the graph")
            if n in owner:
                raise GenerationError(f"node {n} is in patterns {owner[n].pattern['id']} and "
                                      f"{site.pattern['id']}")
            owner[n] = site
    # Values read by something other than their own pattern's nodes (or returned).
    read_outside = {r for o in graph["outputs"] for r in refs_of(decode_arg(o))}
    for site in sites:
        read_outside.update(site.input_names)
    for n in graph["nodes"]:
        for r in node_inputs(n):
            if owner.get(n["name"]) is not owner.get(producer.get(r, "")):
                read_outside.add(r)
    # Kernel inputs made from constants alone are computed at load (fact.load_time, which
    # reads this module's helpers: imported here).
    from fact import load_time
    cones = load_time.constant_cones(graph, [v for s in sites for v in s.load_time_inputs], set(owner))
    folded = {c.value for c in cones}
    outside_readers = {r: 1 for o in graph["outputs"] for r in refs_of(decode_arg(o))}
    outside_readers.update({v: 1 for s in sites for v in s.input_names if v not in folded})
    items: list[_Item] = []
    kept: set[str] = set()
    for site in sites:
        kept.update(_kept_members(site, nodes, read_outside))
        out_node = next((n for n in site.pattern["nodes"]
                         if site.pattern["output"] in _outputs(nodes[n])), site.pattern["nodes"][-1])
        items.append(_Item(position[out_node], list(site.input_names), list(site.defines),
                           site=site))
    made_by_kernel = {v for s in sites for v in s.defines}
    running = {name for name in nodes if name not in owner or name in kept}
    dropped = load_time.droppable_nodes(graph, cones, outside_readers, running)
    for name, n in nodes.items():
        if (name in owner and name not in kept) or name in dropped:
            continue
        makes = [o for o in _outputs(n) if o not in made_by_kernel]
        items.append(_Item(position[name], node_inputs(n), makes, node=n))
    symbols = symbol_dims([(i["name"], i.get("type")) for i in graph["inputs"]],
                          set(graph.get("symbols") or ())) if graph.get("symbols") else {}
    builder = ModuleBuilder([i["name"] for i in graph["inputs"]] + list(tensor_names), symbols,
                            narrowed)
    for name in tensor_names:
        if name in builder.narrowed:
            builder.convert_at_load(name)
    for cone in cones:
        compute = generate_nodes(cone.nodes, cone.sources, [cone.value], narrowed=narrowed)
        builder.define(cone.value, builder.load_time_tensor(f"fact_table_{cone.value}", compute, cone.sources))
    aten = _place(builder, items)
    module = builder.finish([decode_arg(o) for o in graph["outputs"]])
    return module, aten, builder.load_time


def generate_nodes(nodes: Sequence[Mapping], input_names: Sequence[str],
                   outputs: Sequence[str],
                   types: Mapping[str, Mapping | None] | None = None,
                   narrowed: Mapping[str, Narrowed] | None = None) -> torch.fx.GraphModule:
    """A GraphModule running graph ``nodes`` (in their order) on ``input_names`` and returning
    ``outputs`` (one tensor, or a list when there are several): a kernel's ATen fallback.
    ``types`` (value -> graph type) gives the symbols' input dims of a graph with symbols.
    ``narrowed``: inputs and outputs among them are stored narrow; the nodes cast by the rule.

    Raises:
        GenerationError: a node reads a value that is neither an input nor made before it.
    """
    symbols = symbol_dims([(n, (types or {}).get(n)) for n in input_names])
    builder = ModuleBuilder(list(input_names), symbols, narrowed)
    for n in nodes:
        builder.aten_node(n)
    outs = [builder.value(o) for o in outputs]
    builder.graph.output(outs[0] if len(outs) == 1 else list(outs))
    builder.graph.lint()
    return torch.fx.GraphModule({}, builder.graph)


def default_emit(builder: ModuleBuilder, site: KernelSite) -> None:
    """One call of the site's kernel module defining its output and extra outputs."""
    builder.define_results(builder.kernel_call(site), site.defines)
