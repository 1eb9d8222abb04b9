"""Attention patterns through the whole pipeline, on CPU: ``fact optimize`` with the stand-in
engine composing an attention pattern onto the stand-in kernel library (verification, fallback
list, coverage, report), and the real engine's plans for the attention examples composed by
``factc compose`` and run through the attention binding."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn

from attention_cases import MinGptAttention, mingpt_artifact
from fact.export import export, write_graph
from fact.runtime import load


def _optimize_mingpt(tmp_path, lib: str, monkeypatch, model: nn.Module,
                     remainder: str = "aten") -> dict:
    """``fact optimize`` on the small minGPT block, the stand-in engine composing the
    attention pattern onto the host library (whose kernels take CPU tensors); the nodes
    outside the kernel run under ``remainder``."""
    opt = importlib.import_module("fact.optimize")  # the module (fact.optimize is a function)
    graph_art, _ = mingpt_artifact(tmp_path, lib, model=model)
    pattern = json.loads(open(os.path.join(graph_art, "manifest.json")).read())["patterns"][0]
    pattern.update(vendor_ms=0.2, time_ms=0.1, max_rel_err=1e-6)
    (tmp_path / "patterns.json").write_text(json.dumps([pattern]))
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    monkeypatch.setenv("FAKE_FACTC_PATTERNS", str(tmp_path / "patterns.json"))
    monkeypatch.setenv("FAKE_FACTC_LIBRARY", lib)

    def load_on_host(art, m):
        fm = load(art, m)
        for b in fm.bindings.values():
            b.device_type = "cpu"
        return fm

    monkeypatch.setattr(opt, "load", load_on_host)
    before = torch.get_float32_matmul_precision()
    try:
        module = opt.optimize(model, [torch.randn(2, 8, 32)], precision="fp32",
                              out_dir=str(tmp_path / "w"), trials=20, remainder=remainder)
    finally:
        torch.set_float32_matmul_precision(before)
    md = (tmp_path / "w" / "artifact" / "report.md").read_text()
    return {"row": module.report["row"], "md": md, "module": module}


def test_optimize_runs_and_reports_the_attention_kernel(tmp_path, attention_library: str,
                                                        fake_factc, monkeypatch) -> None:
    r = _optimize_mingpt(tmp_path, attention_library, monkeypatch, MinGptAttention())
    row = r["row"]
    assert row["verified"] and row["verified_on"] == ["own inputs"]
    assert row["fallbacks"] == 0 and row["fallback_reasons"] == {} and row["aten_patterns"] == {}
    assert row["kernels"] == ["fa_causal_kernel"]
    assert row["coverage"] > 0
    assert row["max_rel_err"] < 1e-5
    assert "(attention: mask causal, 4 heads (MHA), D 8, T 8x8, out bthd)" in r["md"]
    assert "for a pattern the ATen check timed in the module (attention), its own ATen nodes" in r["md"]


def test_optimize_lists_the_fallback_of_an_altered_causal_buffer(
        tmp_path, attention_library: str, fake_factc, monkeypatch) -> None:
    model = MinGptAttention()
    with torch.no_grad():
        model.bias[0, 0, 3, 6] = 1.0
    r = _optimize_mingpt(tmp_path, attention_library, monkeypatch, model)
    row = r["row"]
    assert row["verified"]  # the ATen nodes compute what the altered model computes
    (reason,) = row["aten_patterns"].values()
    assert "buffer b_bias is no longer lower-triangular" in reason
    assert row["fallbacks"] > 0 and row["fallback_reasons"] == {"p0": {reason: row["fallbacks"]}}
    assert row["coverage"] == 0.0  # the kernel never runs
    assert f"- Pattern p0 runs its ATen nodes, not its kernel: {reason}" in r["md"]
    assert f"  - p0, {row['fallbacks']} calls: {reason}" in r["md"]
    assert "— not run: its ATen nodes run (see above)" in r["md"]


def test_under_inductor_the_altered_causal_buffer_hands_the_pattern_back(
        tmp_path, attention_library: str, fake_factc, monkeypatch) -> None:
    model = MinGptAttention()
    with torch.no_grad():
        model.bias[0, 0, 3, 6] = 1.0
    r = _optimize_mingpt(tmp_path, attention_library, monkeypatch, model, remainder="inductor")
    row = r["row"]
    assert row["verified"] and row["remainder"] == "inductor" and row["remainder_failed"] == ""
    (reason,) = row["aten_patterns"].values()
    assert "buffer b_bias is no longer lower-triangular" in reason  # the reason, kept
    assert r["module"].bindings == {} and row["fallbacks"] == 0  # Inductor runs its nodes
    assert row["composition"] is None  # CPU: nothing is timed
    assert f"- Pattern p0 runs its ATen nodes, not its kernel: {reason}" in r["md"]
    assert "- Remainder (the nodes outside FACT's kernels): inductor" in r["md"]


# ------------------------------------------------------------------ with the real engine

def _example_model(repo_root: str, name: str, *init) -> nn.Module:
    """examples/attention/<name>.py's Model, built with small ``init`` arguments."""
    path = os.path.join(repo_root, "examples", "attention", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"attention_example_{name.replace('-', '_')}",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Model(*init)


# (example, its Model's small constructor arguments, input shape): every head dim is 8.
_EXAMPLES = [("L3-43_mingpt_attention", (32, 4, 0.0, 0.0, 16), (2, 8, 32)),
             ("sdpa_attention", (32, 4), (2, 8, 32)),
             ("gqa_attention", (48, 6, 2), (2, 8, 48))]


@pytest.mark.parametrize("name,init,shape", _EXAMPLES, ids=[e[0] for e in _EXAMPLES])
def test_discovered_plan_composes_and_runs(tmp_path, repo_root: str, name: str, init: tuple,
                                           shape: tuple) -> None:
    """The engine's own plan for an attention example (factc discover), a realization whose
    winner is the stand-in kernel (compiled here, as realize would have), factc compose,
    then the runtime: plan, manifest and binding agree on the attention contract."""
    factc = os.path.join(repo_root, "build", "factc")
    cc = shutil.which("cc")
    if not os.path.isfile(factc) or cc is None or os.environ.get("FACT_SKIP_NVCC_TESTS") == "1":
        pytest.skip("needs build/factc, a C compiler and nvcc (compose links with it)")
    torch.manual_seed(0)
    model = _example_model(repo_root, name, *init)
    x = torch.randn(*shape)
    write_graph(export(model, [x]), tmp_path / "graph.json")
    subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "-o",
                    str(tmp_path / "plan.json"), "--policy", "fp32"], check=True,
                   capture_output=True)
    plan = json.loads((tmp_path / "plan.json").read_text())
    (attn,) = [p for p in plan["patterns"] if p["rule"] == "attention"]
    assert attn["problem"]["mask"] == "causal" and attn["problem"]["output_layout"] == "bthd"
    obj = tmp_path / "fake_attention.o"
    subprocess.run([cc, "-c", "-fPIC", "-O1", "-I", os.path.join(repo_root, "src", "families"),
                    os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "fake_attention.c"), "-o", str(obj)], check=True)

    def vendor(p: dict) -> dict:
        return {"kernel": f"cublas_{p['id']}", "impl": "vendor", "status": "ok",
                "median_ms": 0.2, "max_rel_err": None}

    patterns = []
    for p in plan["patterns"]:
        r = {"id": p["id"], "problem": p["problem"], "compile_s": 0.0, "tune_s": 0.0,
             "candidates": [vendor(p)], "winner": vendor(p)["kernel"],
             "winner_impl": "vendor"}
        if p["id"] == attn["id"]:
            r["candidates"].append({"kernel": "fa_causal", "impl": "cutlass", "status": "ok",
                                    "median_ms": 0.1, "max_rel_err": 1e-6,
                                    "workspace_bytes": 64, "object": str(obj)})
            r.update(winner="fa_causal", winner_impl="cutlass")
        patterns.append(r)
    (tmp_path / "realized.json").write_text(json.dumps({
        "format": "fact.realized", "version": 1, "policy": "fp32", "gpu": "stand-in",
        "patterns": patterns}))
    subprocess.run([factc, "compose", str(tmp_path / "plan.json"),
                    str(tmp_path / "realized.json"), "--graph", str(tmp_path / "graph.json"),
                    "-o", str(tmp_path / "artifact")], check=True, capture_output=True)
    manifest = json.loads((tmp_path / "artifact" / "manifest.json").read_text())
    entry = next(p for p in manifest["patterns"] if p["id"] == attn["id"])
    assert (entry["abi"], entry["symbol"], entry["impl"]) == ("attention", "fa_causal",
                                                              "cutlass")
    fm = load(tmp_path / "artifact", model)
    fm.bindings[attn["id"]].device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {attn["id"]: 0} and fm.disabled_patterns() == {}
    # Only the projections (and the head split views) stay ATen ops.
    ops = {n["name"]: n["op"] for n in json.loads((tmp_path / "graph.json").read_text())["nodes"]}
    assert not {ops[n] for n in fm.aten_nodes()} & {
        "aten.matmul.default", "aten.softmax.int", "aten.scaled_dot_product_attention.default",
        "aten.repeat_interleave.self_int"}
    p = attn["problem"]
    heads = "(MHA)" if p["heads"] == p["kv_heads"] else \
        f"Hkv={p['kv_heads']} (GQA {p['heads'] // p['kv_heads']}:1)"
    assert f"attention B=2 H={p['heads']} {heads} Tq=8 Tk=8 D=8 float32 mask:causal" in \
        (tmp_path / "artifact" / "report.md").read_text()
