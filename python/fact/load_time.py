"""Kernel inputs computed once at load (docs/05-composition.md, "The generated module"): a
value a kernel reads that depends only on constants of the export — buffers, constant
tensors and ops without inputs such as ``arange`` over constant sizes — is the same on every
call, so the generated module computes it when it is built, not per call.

The rotary embedding's cos/sin tables are the case in point: Hugging Face's
``LlamaRotaryEmbedding`` builds them in forward from its ``inv_freq`` buffer and the
positions ``arange(T)`` (``inv_freq[None, :, None].expand(...) @ position_ids[:, None, :]``,
``transpose``, ``cat``, ``cos``/``sin``, ``* attention_scaling``, ``to(dtype)``). A family
names the operands this may apply to (:attr:`fact.families.Family.load_time_roles`; rope:
``cos``, ``sin``); :func:`constant_cones` finds, for each such value, the graph nodes that
compute it, when every one of them

- is outside every kernel's pattern,
- is a functional, deterministic ATen op (no mutation, no random draw),
- has no symbolic size among its arguments (a graph with symbols computes those per call),
- reads only constants (``kind`` ``buffer`` or ``constant`` in ``graph["params"]``) and
  values of such nodes — never a graph input or a parameter (weights may be trained).

A buffer changed after load is not seen by a table computed from it (the module is built
for the buffers it is given).

Tests: ``tests/python/test_load_time.py``, ``tests/python/families/test_rope.py`` (end to end).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import torch

from fact.module_gen import Sym, decode_arg, node_inputs, resolve_op

__all__ = ["ConstantCone", "constant_cones", "droppable_nodes"]


class ConstantCone:
    """The nodes computing one value from constants alone.

    Attributes:
        value: the graph value.
        nodes: the graph nodes that compute it, in graph order.
        sources: the constants (placeholder names) they read, in first-read order.
    """

    def __init__(self, value: str, nodes: list[Mapping], sources: list[str]) -> None:
        self.value, self.nodes, self.sources = value, nodes, sources

    def __repr__(self) -> str:
        return f"ConstantCone({self.value}: {[n['name'] for n in self.nodes]} from {self.sources})"


def _has_sym(arg: Any) -> bool:
    if isinstance(arg, Sym):
        return True
    if isinstance(arg, (list, tuple)):
        return any(_has_sym(a) for a in arg)
    if isinstance(arg, dict):
        return any(_has_sym(a) for a in arg.values())
    return False


def _pure(node: Mapping) -> bool:
    """A functional, deterministic op without symbolic sizes."""
    try:
        op = resolve_op(node["op"])
    except Exception:  # an op this torch lacks: never folded (the module says so elsewhere)
        return False
    if not isinstance(op, torch._ops.OpOverload):
        return False
    if op._schema.is_mutable or torch.Tag.nondeterministic_seeded in op.tags:
        return False
    if op.name().startswith("aten::empty"):  # uninitialized memory
        return False
    args = [decode_arg(a) for a in node.get("args", [])]
    kwargs = {k: decode_arg(v) for k, v in (node.get("kwargs") or {}).items()}
    return not _has_sym(args) and not _has_sym(kwargs)


def constant_cones(graph: Mapping, values: Iterable[str], owned: set[str]) -> list[ConstantCone]:
    """The values among ``values`` that depend only on constants of the export, each with the
    nodes computing it (see the module docstring). ``owned``: names of the nodes inside
    kernel patterns. A value that is itself a placeholder, or whose nodes fail a condition,
    is left out."""
    nodes = {n["name"]: n for n in graph["nodes"]}
    position = {name: i for i, name in enumerate(nodes)}
    producer = {o["name"]: name for name, n in nodes.items() for o in n["outputs"]}
    constants = {p["name"] for p in graph.get("params", []) if p.get("kind") in ("buffer", "constant")}
    memo: dict[str, bool] = {}

    def foldable(name: str) -> bool:  # node `name` and everything it reads
        if name not in memo:
            memo[name] = False  # a cycle (not in a valid graph) folds nothing
            n = nodes[name]
            memo[name] = (name not in owned and _pure(n) and
                          all(v in constants or (v in producer and foldable(producer[v]))
                              for v in node_inputs(n)))
        return memo[name]

    cones: list[ConstantCone] = []
    for value in dict.fromkeys(values):
        root = producer.get(value)
        if root is None or not foldable(root):
            continue
        cone, sources, todo = set(), [], [root]
        while todo:
            name = todo.pop()
            if name in cone:
                continue
            cone.add(name)
            for v in node_inputs(nodes[name]):
                if v in producer:
                    todo.append(producer[v])
                elif v not in sources:
                    sources.append(v)
        ordered = sorted(cone, key=position.__getitem__)
        first_read = {v: min(position[n] for n in ordered if v in node_inputs(nodes[n])) for v in sources}
        cones.append(ConstantCone(value, [nodes[n] for n in ordered],
                                  sorted(sources, key=first_read.__getitem__)))
    return cones


def droppable_nodes(graph: Mapping, cones: list[ConstantCone], readers: Mapping[str, int],
                    running: set[str]) -> set[str]:
    """The cones' nodes the module need not run any more: each of whose outputs is a folded
    value (computed at load) or read only by other droppable nodes; with them the nodes
    without outputs (export's ``_assert_tensor_metadata``) that read only cone values. ``readers``: value ->
    how many readers outside the graph's nodes it has (kernel calls of values that are not
    folded, the graph's outputs); ``running``: the graph nodes the module runs as ATen calls
    (a node inside a kernel's pattern reads nothing per call)."""
    folded = {c.value for c in cones}
    candidates = {n["name"]: n for c in cones for n in c.nodes}
    made = {o["name"] for n in candidates.values() for o in n["outputs"]}
    for n in graph["nodes"]:  # assertions about the cones' values
        if n["name"] in running and not n["outputs"] and node_inputs(n) and set(node_inputs(n)) <= made:
            candidates[n["name"]] = n
    users: dict[str, set[str]] = {}
    for n in graph["nodes"]:
        if n["name"] in running:
            for v in node_inputs(n):
                users.setdefault(v, set()).add(n["name"])
    producer = {o["name"]: name for name, n in candidates.items() for o in n["outputs"]}
    drop = set(candidates)
    changed = True
    while changed:
        changed = False
        for name in list(drop):
            if not candidates[name]["outputs"] and any(producer[v] not in drop for v in node_inputs(candidates[name])):
                drop.discard(name)  # an assertion about a value still made per call
                changed = True
                continue
            for o in candidates[name]["outputs"]:
                v = o["name"]
                if v in folded:
                    continue
                if readers.get(v, 0) or users.get(v, set()) - drop:
                    drop.discard(name)
                    changed = True
                    break
    return drop
