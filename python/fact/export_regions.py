"""Higher-order regions of an exported program, inlined or refused (used by fact.export).

``torch.export`` records a ``with torch.autocast(..., enabled=False):`` or ``torch.no_grad()``
block in forward as one higher-order op (``wrap_with_autocast``, ``wrap_with_set_grad_enabled``)
whose body is a submodule reached through ``get_attr``. Hugging Face's rotary embeddings
compute cos/sin that way (transformers 5.17's ``LlamaRotaryEmbedding``). A FACT graph holds
ATen ops only, so :func:`inline_regions` copies each such body into the enclosing graph:

- grad mode changes nothing a forward computes, so its regions are always inlined;
- an autocast region with ``enabled=False`` runs its ops in the dtypes they name, which the
  body records, so it is inlined too (the inlined outputs' dtypes are checked against what
  export recorded for the region, and a difference is an error);
- an *enabled* autocast region casts inside dispatch, which the body does not record (a
  ``linear`` of float32 tensors that autocast runs in bf16), so it is refused with a message
  naming the module, as is every other higher-order op (``cond``, ``while_loop``, ...).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

__all__ = ["inline_regions", "RegionError"]

_GRAD = "wrap_with_set_grad_enabled"
_AUTOCAST = "wrap_with_autocast"


class RegionError(RuntimeError):
    """A higher-order op FACT cannot inline (fact.export raises it as an ExportError)."""


def _hop_name(node: torch.fx.Node) -> str | None:
    target = node.target
    if node.op == "call_function" and isinstance(target, torch._ops.HigherOrderOperator):
        return target.__name__
    return None


def _module_path(node: torch.fx.Node, body: torch.fx.GraphModule | None) -> str:
    """The deepest module the region's ops came from, as 'path (Class)', or 'the model'."""
    stacks = [node.meta.get("nn_module_stack") or {}]
    if body is not None:
        stacks += [n.meta.get("nn_module_stack") or {} for n in body.graph.nodes]
    path, cls = "", ""
    for stack in stacks:
        for p, c in stack.values():
            if len(p) > len(path):
                path, cls = p, c if isinstance(c, str) else getattr(c, "__qualname__", str(c))
    return f"module {path} ({cls})" if path else "the model's own forward"


def _split(node: torch.fx.Node, gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[Any]]:
    """The region's body and its operands: wrap_with_autocast(device, dtype, enabled,
    cache_enabled, body, *operands), wrap_with_set_grad_enabled(enabled, body, *operands)."""
    at = 4 if _hop_name(node) == _AUTOCAST else 1
    attr = node.args[at]
    body = getattr(gm, attr.target) if isinstance(attr, torch.fx.Node) else attr
    return body, list(node.args[at + 1:])


class _Names:
    """Node names of the inlined graph: the enclosing graph's nodes keep theirs (the graph
    signature and the FACT graph refer to them); a body's node keeps its own unless that is
    taken, then gets the first free ``<name>_<i>``."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        # The names the copy keeps: every node but the regions, their getitems and bodies.
        regions = {n for n in gm.graph.nodes if _hop_name(n) is not None}
        dropped = regions | {n for n in gm.graph.nodes
                             if (n.op == "call_function" and n.target is operator.getitem and n.args[0] in regions)
                             or (n.op == "get_attr" and isinstance(getattr(gm, n.target, None), torch.fx.GraphModule))}
        self.used = {n.name for n in gm.graph.nodes if n not in dropped}

    def body(self, name: str) -> str:
        if name not in self.used:
            self.used.add(name)
            return name
        i = 1
        while f"{name}_{i}" in self.used:
            i += 1
        self.used.add(f"{name}_{i}")
        return f"{name}_{i}"


def _copy_into(out: torch.fx.Graph, gm: torch.fx.GraphModule, env: dict, operands: list[Any],
               names: _Names, top: bool) -> list[Any]:
    """Copies gm's graph into ``out`` (operands for its placeholders, in order; regions
    inside inlined in turn); returns what its output node returns, mapped."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(operands):
        raise RegionError(f"a region's body takes {len(placeholders)} operands, given {len(operands)}")
    for p, v in zip(placeholders, operands):
        env[p] = v
    result: list[Any] = []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            result = list(torch.fx.node.map_arg(n.args[0], lambda a: env[a]))
        elif n.op == "get_attr" and isinstance(getattr(gm, n.target, None), torch.fx.GraphModule):
            env[n] = n  # a body: read by the region op that follows
        elif _hop_name(n) is not None:
            env[n] = _inline_one(out, gm, n, env, names)
        elif n.op == "call_function" and n.target is operator.getitem and isinstance(env.get(n.args[0]), list):
            env[n] = env[n.args[0]][n.args[1]]
        else:
            env[n] = out.node_copy(n, lambda a: env[a])
            env[n].name = n.name if top else names.body(n.name)
    return result


def _inline_one(out: torch.fx.Graph, gm: torch.fx.GraphModule, node: torch.fx.Node, env: dict,
                names: _Names) -> list[Any]:
    hop = _hop_name(node)
    body, operands = _split(node, gm) if hop in (_GRAD, _AUTOCAST) else (None, [])
    if hop == _AUTOCAST and node.args[2]:
        raise RegionError(
            f"node {node.name}: an autocast region (to {node.args[1]}) in {_module_path(node, body)}: "
            f"autocast casts inside dispatch, which the exported graph does not record; run the "
            f"model in that dtype (model.to({node.args[1]})) or use FACT's precision policy "
            f"(--precision bf16) instead of autocast")
    if hop not in (_GRAD, _AUTOCAST):
        raise RegionError(f"node {node.name}: higher-order op {hop} in {_module_path(node, None)} "
                          f"is not supported; FACT graphs hold ATen ops (autocast with enabled=False "
                          f"and grad-mode regions are inlined)")
    mapped = [torch.fx.node.map_arg(a, lambda x: env[x]) for a in operands]
    result = _copy_into(out, body, {}, mapped, names, top=False)
    want = node.meta.get("val")
    if isinstance(want, (list, tuple)):
        for i, (r, w) in enumerate(zip(result, want)):
            got = r.meta.get("val") if isinstance(r, torch.fx.Node) else None
            if isinstance(w, torch.Tensor) and isinstance(got, torch.Tensor) and got.dtype != w.dtype:
                raise RegionError(f"node {node.name}: output {i} of the {hop} region in "
                                  f"{_module_path(node, body)} is {got.dtype} in its body but "
                                  f"{w.dtype} where the model uses it")
    return result


def inline_regions(ep: torch.export.ExportedProgram) -> torch.fx.Graph:
    """``ep``'s graph with every grad-mode and disabled-autocast region inlined (a new graph;
    ``ep`` is not changed; ``ep.graph`` itself when it has no region). The enclosing graph's
    node names stay as they are (a body's node takes a free name); the output node keeps
    its positions.

    Raises:
        RegionError: an enabled autocast region or another higher-order op, naming the node
        and the module it came from.
    """
    if not any(_hop_name(n) is not None for n in ep.graph.nodes):
        return ep.graph
    out = torch.fx.Graph()
    names = _Names(ep.graph_module)
    env: dict = {}
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            env[n] = out.node_copy(n)
            env[n].name = n.name
    gm = ep.graph_module
    result = _copy_into(out, gm, env, [env[n] for n in ep.graph.nodes if n.op == "placeholder"], names, top=True)
    out.output(tuple(result))
    return out
