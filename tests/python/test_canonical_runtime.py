"""The canonical form end to end on CPU: attention written the way Hugging Face and
Inductor's spellings write it (assertions and casts export adds, dropout in eval mode, 0-d
fills, expand_as and where masks) is discovered by the real engine over the canonical graph,
and the plan's pattern, which lists the dropped nodes inside it, runs on the stand-in kernel
through the runtime, which interprets the exported graph (docs/03-rules.md, "Canonical
form")."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from attention_cases import attn_artifact, attn_pattern, discover_plan
from fact.export import export
from artifacts import write_artifact
from fact.runtime import load

B, H, T, D = 2, 4, 8, 8
SYMBOL = {"none": "fa_none", "additive": "fa_additive", "keep": "fa_keep", "drop": "fa_drop"}


class HfEager(nn.Module):
    """HF's eager attention: softmax(dtype=float32).to(q.dtype), eval-mode dropout, + mask."""

    def forward(self, q, k, v, mask):
        s = torch.matmul(q, k.transpose(2, 3)) * D ** -0.5 + mask
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        p = F.dropout(p, p=0.1, training=False)
        return torch.matmul(p, v).transpose(1, 2).contiguous()


class FullFill(nn.Module):
    """Inductor's _sfdp_pattern_15 style: a 0-d -inf fill and a mask reaching it by expand_as."""

    def forward(self, q, k, v, pad):
        s = (q @ k.transpose(-2, -1)).div(torch.full((), 2.0))
        m = (pad == 0).view(B, 1, 1, T).expand_as(s)
        s = s.masked_fill(m, torch.full((), float("-inf")))
        return s.softmax(dim=-1).type_as(q) @ v


class WhereKeep(nn.Module):
    """torch.where(keep, scores, -inf) with a 0-d fill and a 0-d scale."""

    def forward(self, q, k, v, keep):
        s = torch.matmul(q, k.transpose(-2, -1)) / torch.full((), 3.0)
        s = torch.where(keep, s, torch.full((), float("-inf")))
        return torch.matmul(F.dropout(s.softmax(-1), 0.0, True), v)


def _inputs(name: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, generator=g) for _ in range(3))
    if name == "HfEager":
        return [q, k, v, torch.randn(B, 1, T, T, generator=g)]
    if name == "FullFill":
        pad = (torch.rand(B, T, generator=g) > 0.3).float()
        pad[:, 0] = 1.0  # every row keeps a key
        return [q, k, v, pad]
    keep = torch.rand(B, 1, T, T, generator=g) > 0.3
    keep[..., 0] = True
    return [q, k, v, keep]


@pytest.mark.parametrize("model_cls", [HfEager, FullFill, WhereKeep], ids=lambda c: c.__name__)
def test_dropped_nodes_go_with_the_pattern_and_it_runs(tmp_path, attention_library: str,
                                                       model_cls) -> None:
    model = model_cls().eval()
    inputs = _inputs(model_cls.__name__)
    graph = export(model, inputs)
    plan = discover_plan(tmp_path, graph)
    (attn,) = [p for p in plan["patterns"] if p["rule"] == "attention"]
    ops = {n["name"]: n["op"] for n in graph["nodes"]}
    # The nodes the canonical form dropped inside the attention belong to its pattern.
    canonical_only = {"aten._assert_tensor_metadata.default", "aten.to.dtype", "aten.dropout.default",
                      "aten.type_as.default", "aten.full.default", "aten.expand_as.default"}
    inner = [n for n in graph["nodes"] if n["op"] in canonical_only and n["name"] not in
             {f["node"] for f in plan["fallback"]}]
    assert inner and all(n["name"] in attn["nodes"] for n in inner), (attn["nodes"], inner)
    assert not any(ops[f["node"]] in {"aten.softmax.int", "aten.matmul.default"} for f in plan["fallback"])
    pattern = attn_pattern(attn["nodes"], attn["output"], attn["operands"], attn["problem"],
                           SYMBOL[attn["problem"]["mask"]])
    art = attn_artifact(tmp_path, graph, [pattern], attention_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"  # host memory is the stand-in's device
    with torch.no_grad():
        out, want = fm(*inputs), model(*inputs)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0} and fm.disabled_patterns() == {}
    assert not {ops[n] for n in fm.aten_nodes()} & (canonical_only | {"aten.softmax.int"})


def test_an_identity_outside_every_pattern_vanishes_from_the_module(tmp_path) -> None:
    """A dropped node no pattern takes is listed as fallback with why it is an identity and
    the value it equals (``same_as``); compose lists it as ``dropped`` and the generated
    module leaves it out, its readers reading that value."""
    class Tail(nn.Module):
        def forward(self, x):
            return F.dropout(torch.relu(x).to(torch.float32), 0.1, training=False)

    x = torch.randn(4, 8)
    graph = export(Tail().eval(), [x])
    plan = discover_plan(tmp_path, graph)
    reasons = {f["node"]: f["reason"] for f in plan["fallback"]}
    assert any("the canonical form drops it: dropout with train=False" in r for r in reasons.values()), reasons
    dropped = [n["name"] for n in graph["nodes"] if n["op"] in {
        "aten.dropout.default", "aten.to.dtype", "aten._assert_tensor_metadata.default"}]
    assert json.dumps(plan).count("canonical form drops it") == len(dropped)
    same_as = {f["node"]: f["same_as"] for f in plan["fallback"] if "same_as" in f}
    assert sorted(same_as) == sorted(dropped)
    relu = next(n["name"] for n in graph["nodes"] if n["op"] == "aten.relu.default")
    assert {same_as[n] for n in dropped if same_as[n]} == {relu}
    art = write_artifact(tmp_path, graph, [])
    manifest = json.loads((tmp_path / "artifact" / "manifest.json").read_text())
    manifest["dropped"] = [{"node": n, "same_as": v} for n, v in same_as.items()]
    (tmp_path / "artifact" / "manifest.json").write_text(json.dumps(manifest))
    fm = load(art, Tail())
    assert fm.aten_nodes() == [relu] and sorted(fm.dropped_nodes) == sorted(dropped)
    assert torch.equal(fm(x), torch.relu(x))


def test_discover_canonical_prints_the_canonical_graph(tmp_path, factc) -> None:
    """``factc discover --canonical`` prints the graph every rule sees and what it dropped."""
    import subprocess

    from fact.export import write_graph
    graph = export(HfEager().eval(), _inputs("HfEager"))
    write_graph(graph, tmp_path / "graph.json")
    out = subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "--canonical"],
                         check=True, capture_output=True, text=True).stdout
    assert out.startswith("graph ") and "aten.softmax.int" in out
    assert "aten._assert_tensor_metadata.default(" not in out.split("}\n")[0]
    assert "# dropped %_assert_tensor_metadata_default (aten._assert_tensor_metadata.default): an assertion" in out
    assert "# dropped %dropout (aten.dropout.default): dropout with train=False" in out
