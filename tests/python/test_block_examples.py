"""examples/blocks/: each block at its CI size exports, runs like its eager self, and is
discovered by the real engine with every Linear inside a GEMM pattern, every norm (with
the residual add feeding it) inside a norm pattern and, in the Llama block, the rotary
embedding of q and of k each one rope pattern whose output the attention reads."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess

import pytest
import torch

from fact.export import export, write_graph

BLOCKS = ["L3-44_minigpt_block", "llama3_8b_block", "bert_encoder_layer"]


def _load(repo_root: str, name: str):
    path = os.path.join(repo_root, "examples", "blocks", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"block_{name.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_sizes(repo_root: str) -> None:
    mini = _load(repo_root, "L3-44_minigpt_block")
    assert (mini.batch_size, mini.seq_len, mini.n_embd, mini.n_head) == (128, 512, 768, 8)
    llama = _load(repo_root, "llama3_8b_block")
    assert (llama.batch_size, llama.seq_len, llama.dim, llama.n_head, llama.n_kv_head) == (16, 2048, 4096, 32, 8)
    assert llama.swiglu_width(14336) == 9728 and llama.norm_eps == 1e-5
    bert = _load(repo_root, "bert_encoder_layer")
    assert (bert.hidden, bert.n_head, bert.ffn) == (768, 12, 3072)


@pytest.mark.parametrize("name", BLOCKS)
def test_each_block_is_discovered_with_every_linear_in_a_gemm(name, repo_root, factc, tmp_path) -> None:
    module = _load(repo_root, name)
    torch.manual_seed(0)
    model = module.Model(*module.small_init_inputs())
    inputs = module.small_inputs()
    out = model(*inputs)
    assert torch.isfinite(out).all() and out.abs().max() > 0
    graph = export(model, inputs)
    write_graph(graph, tmp_path / "graph.json")
    subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "-o", str(tmp_path / "plan.json")],
                   check=True, capture_output=True)
    plan = json.loads((tmp_path / "plan.json").read_text())
    linears = {n["name"] for n in graph["nodes"] if n["op"] == "aten.linear.default"}
    in_gemm = {n for p in plan["patterns"] if p["rule"] == "gemm" for n in p["nodes"]}
    expected = {"L3-44_minigpt_block": 4, "llama3_8b_block": 7, "bert_encoder_layer": 6}[name]
    assert len(linears) == expected
    assert linears <= in_gemm, sorted(linears - in_gemm)
    _check_norms(name, graph, plan)
    _check_rope(name, graph, plan)
    _check_padding_mask(name, graph, plan)


def _check_padding_mask(name: str, graph: dict, plan: dict) -> None:
    """BERT: the key-padding mask's (1.0 - mask) * finfo.min is the attention's mask prologue
    (rsub and mul in its pattern, the mask operand the 0/1 mask's view); nothing of it is
    left to ATen."""
    if name != "bert_encoder_layer":
        return
    (attn,) = [p for p in plan["patterns"] if p["rule"] == "attention"]
    ops = {n["name"]: n["op"] for n in graph["nodes"]}
    assert {ops[n] for n in attn["nodes"]} >= {"aten.rsub.Scalar", "aten.mul.Tensor"}
    assert ops[attn["operands"]["mask"]] == "aten.unsqueeze.default"
    assert (attn["problem"]["mask_rsub"], attn["problem"]["mask_scale"]) == \
        (1.0, torch.finfo(torch.float32).min)
    left = {f["op"] for f in plan["fallback"]}
    assert not left & {"aten.rsub.Scalar", "aten.mul.Tensor"}, plan["fallback"]


def _check_norms(name: str, graph: dict, plan: dict) -> None:
    """minGPT: both LayerNorms; BERT: both post-norm LayerNorms with their adds (sums not
    read after); Llama: both RMSNorms written out. In the pre-norm blocks each residual add
    is in the epilogue of the GEMM before it (attention's output projection, the MLP's last
    one), the norm after it reading the sum: one pass of [M, N] less than add & norm."""
    norms = [p for p in plan["patterns"] if p["rule"] == "norm"]
    in_norm = {n for p in norms for n in p["nodes"]}
    by_op: dict[str, list[str]] = {}
    for n in graph["nodes"]:
        by_op.setdefault(n["op"], []).append(n["name"])
    assert len(norms) == 2, [p["nodes"] for p in norms]
    if name == "llama3_8b_block":
        written = set(by_op["aten.rsqrt.default"] + by_op["aten.pow.Tensor_Scalar"] + by_op["aten.mean.dim"])
        assert written <= in_norm, sorted(written - in_norm)
        assert {p["problem"]["norm"] for p in norms} == {"rms"}
    else:
        assert set(by_op["aten.layer_norm.default"]) <= in_norm
        assert {p["problem"]["norm"] for p in norms} == {"layer"}
    with_add = [p for p in norms if p["problem"]["residual"]]
    residual_tails = [p for p in plan["patterns"] if p["rule"] == "gemm" and p.get("epilogue")
                      and p["epilogue"]["expr"] == "add(c0, acc)"]
    if name == "bert_encoder_layer":
        sums = [p["problem"]["sum_output"] for p in with_add]
        assert len(with_add) == 2 and sums == [None, None]
    else:
        assert with_add == [] and len(residual_tails) == 2
        sums = {p["epilogue"]["output"] for p in residual_tails}
        assert {p["operands"]["x"] for p in norms} & sums  # the second norm reads the first sum


def _check_rope(name: str, graph: dict, plan: dict) -> None:
    """Llama: two rope patterns (q: 4 heads, k: 2 heads of 32, half-split), holding every
    slice, neg and cat of rotate_half, their outputs the attention's q and k; none elsewhere."""
    ropes = [p for p in plan["patterns"] if p["rule"] == "rope"]
    if name != "llama3_8b_block":
        assert ropes == []
        return
    assert len(ropes) == 2, [r for r in plan["rejected"] if r["rule"] == "rope"]
    rotation = {n["name"] for n in graph["nodes"]
                if n["op"] in ("aten.slice.Tensor", "aten.neg.default", "aten.cat.default")}
    assert rotation <= {n for p in ropes for n in p["nodes"]}
    assert sorted(p["problem"]["dims"][1] for p in ropes) == [2, 4]
    assert {(p["problem"]["form"], p["problem"]["head_dim"]) for p in ropes} == {("half", 32)}
    (attn,) = [p for p in plan["patterns"] if p["rule"] == "attention"]
    assert {attn["operands"]["q"], attn["operands"]["k"]} == {p["output"] for p in ropes}
    for p in ropes:  # written in the layout the attention was planned to read
        role = "q" if attn["operands"]["q"] == p["output"] else "k"
        assert p["problem"]["strides"]["out"] == attn["problem"]["strides"][role]


@pytest.mark.parametrize("name", BLOCKS)
def test_each_block_traces_under_torch_compile(name, repo_root) -> None:
    """Dynamo re-imports a forward's module by name (the minGPT block's attention layer is
    loaded from examples/attention/): the torch.compile baseline must trace every block."""
    from fact.problem import _import_file

    module = _import_file(os.path.join(repo_root, "examples", "blocks", f"{name}.py"))
    torch.manual_seed(0)
    model = module.Model(*module.small_init_inputs()).eval()
    inputs = module.small_inputs()
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(model, backend="eager", fullgraph=True)(*inputs)
        torch.testing.assert_close(got, model(*inputs))
