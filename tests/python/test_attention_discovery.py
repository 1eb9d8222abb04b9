"""The attention examples (examples/attention/) exported and discovered by the real engine.

Each example must give exactly one attention pattern with the problem docs/03-rules.md
describes ("The attention rule"), checked field by field, at a small shape of the example's
own Model and at the example's full shape. Export runs on CPU: the models' buffers must hold
data so the graph can record the tril buffer's value class (a model moved to the meta device
records none, and minGPT's mask is then not provably causal).
"""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest
import torch

from fact.export import export, write_graph
from fact.factc import FactcError, find_factc
from fact.problem import load_problem


@pytest.fixture(scope="module")
def factc() -> str:
    try:
        return find_factc()
    except FactcError as exc:
        pytest.skip(f"the engine is not built: {exc}")


def _import_example(path: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location("example_" + os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plan(factc: str, model: torch.nn.Module, inputs: list, tmp_path) -> dict:
    graph = tmp_path / "graph.json"
    write_graph(export(model, inputs), graph)
    plan = tmp_path / "plan.json"
    subprocess.run([factc, "discover", str(graph), "-o", str(plan)], check=True,
                   capture_output=True)
    return json.loads(plan.read_text())


def _attention(plan: dict) -> dict:
    found = [p for p in plan["patterns"] if p["rule"] == "attention"]
    assert len(found) == 1, [p["rule"] for p in plan["patterns"]]
    assert plan["rejected"] == []
    return found[0]


def _problem(b, h, hkv, t, d, q, k, form, mask="causal", scale=None,
             causal_buffer=None) -> dict:
    """The expected problem: q/k/v read in place from a [B, T, *] projection (row strides
    q[2], k[2]), O written merged as [B, T, H*D] (bthd); a causal mask proven from a tril
    buffer names it."""
    p = {"kind": "attention", "batch": b, "heads": h, "kv_heads": hkv, "seq_q": t, "seq_k": t,
         "head_dim": d, "dtype": "float32",
         "scale": scale if scale is not None else 1.0 / math.sqrt(d), "mask": mask,
         "strides": {"q": q, "k": k, "v": k, "o": [t * h * d, d, h * d], "mask": None},
         "output_layout": "bthd", "form": form}
    if causal_buffer:
        p["causal_buffer"] = causal_buffer
    return p


def _causal_flops(b, h, t, d) -> int:
    return 4 * b * h * d * (t * (t + 1) // 2)


def test_mingpt_example_small(factc: str, examples_dir: str, tmp_path) -> None:
    mod = _import_example(os.path.join(examples_dir, "attention", "L3-43_mingpt_attention.py"))
    # 2 heads of 96, T = 16 of a 32-long tril buffer; c_attn's output is [2, 16, 576].
    plan = _plan(factc, mod.Model(192, 2, 0.0, 0.0, 32), [torch.randn(2, 16, 192)], tmp_path)
    p = _attention(plan)
    assert p["problem"] == _problem(2, 2, 2, 16, 96, [9216, 96, 576], [9216, 96, 576], "matmul",
                                    causal_buffer="b_bias")
    assert p["problem"]["scale"] == 1.0 / math.sqrt(96)  # exactly as minGPT computes it
    assert p["operands"] == {"q": "transpose_1", "k": "transpose", "v": "transpose_2"}
    assert p["nodes"] == ["transpose_3", "matmul", "mul", "slice_1", "slice_2", "eq",
                          "masked_fill", "softmax", "dropout", "matmul_1", "transpose_4",
                          "contiguous", "view_3"]
    assert p["output"] == "view_3"
    assert p["estimate"]["flops"] == _causal_flops(2, 2, 16, 96)
    assert p["estimate"]["bytes"] == 4 * (4 * 2 * 2 * 16 * 96)  # Q, K, V, O once
    assert sorted(q["rule"] for q in plan["patterns"]) == ["attention", "gemm", "gemm"]


def test_sdpa_example_small(factc: str, examples_dir: str, tmp_path) -> None:
    mod = _import_example(os.path.join(examples_dir, "attention", "sdpa_attention.py"))
    plan = _plan(factc, mod.Model(128, 2), [torch.randn(2, 16, 128)], tmp_path)
    p = _attention(plan)
    assert p["problem"] == _problem(2, 2, 2, 16, 64, [6144, 64, 384], [6144, 64, 384], "sdpa",
                                    scale=0.125)
    assert p["nodes"] == ["scaled_dot_product_attention", "transpose_3", "view_3"]


def test_gqa_example_small(factc: str, examples_dir: str, tmp_path) -> None:
    mod = _import_example(os.path.join(examples_dir, "attention", "gqa_attention.py"))
    # 4 query heads of 128 share 2 K/V heads (repeat_interleave(2, dim=1), swallowed).
    plan = _plan(factc, mod.Model(512, 4, 2), [torch.randn(2, 16, 512)], tmp_path)
    p = _attention(plan)
    assert p["problem"] == _problem(2, 4, 2, 16, 128, [8192, 128, 512], [4096, 128, 256], "sdpa")
    assert p["nodes"] == ["repeat_interleave", "repeat_interleave_1",
                          "scaled_dot_product_attention", "transpose_3", "view_3"]
    # K and V are the un-repeated [2, 2, 16, 128] values.
    assert p["estimate"]["bytes"] == 4 * (2 * 2 * 4 * 16 * 128 + 2 * 2 * 2 * 16 * 128)


FULL = {
    # file: (expected problem, FLOPs)
    "L3-43_mingpt_attention.py": (
        _problem(128, 8, 8, 512, 96, [1179648, 96, 2304], [1179648, 96, 2304], "matmul",
                 causal_buffer="b_bias"),
        _causal_flops(128, 8, 512, 96)),
    "sdpa_attention.py": (
        _problem(16, 16, 16, 1024, 64, [3145728, 64, 3072], [3145728, 64, 3072], "sdpa",
                 scale=0.125),
        _causal_flops(16, 16, 1024, 64)),
    "gqa_attention.py": (
        _problem(4, 32, 8, 2048, 128, [8388608, 128, 4096], [2097152, 128, 1024], "sdpa"),
        _causal_flops(4, 32, 2048, 128)),
}


@pytest.mark.parametrize("fname", sorted(FULL))
def test_attention_examples_full_shape(factc: str, examples_dir: str, tmp_path,
                                       fname: str) -> None:
    problem, flops = FULL[fname]
    prob = load_problem(os.path.join(examples_dir, "attention", fname))
    assert all(x.dtype == torch.float32 for x in prob.inputs)
    plan = _plan(factc, prob.model, prob.inputs, tmp_path)
    p = _attention(plan)
    assert p["problem"] == problem
    assert p["estimate"]["flops"] == flops
    assert p["priority"] == 0  # the largest gain of the plan


def test_gqa_bf16_example_small(factc: str, examples_dir: str, tmp_path) -> None:
    # The bf16 layer (the sm90 attention kernel's row of the suite): the same pattern in bfloat16.
    mod = _import_example(os.path.join(examples_dir, "attention", "gqa_attention_bf16.py"))
    assert all(x.dtype == torch.bfloat16 for x in mod.get_inputs())
    plan = _plan(factc, mod.Model(512, 4, 2), [torch.randn(2, 16, 512, dtype=torch.bfloat16)], tmp_path)
    p = _attention(plan)
    assert p["problem"] == {**_problem(2, 4, 2, 16, 128, [8192, 128, 512], [4096, 128, 256], "sdpa"),
                            "dtype": "bfloat16"}
    assert p["nodes"] == ["repeat_interleave", "repeat_interleave_1",
                          "scaled_dot_product_attention", "transpose_3", "view_3"]


def test_mingpt_on_meta_is_not_assumed_causal(factc: str, examples_dir: str, tmp_path) -> None:
    # Without the buffer's data nothing proves the mask: rejected with the reason, no pattern.
    mod = _import_example(os.path.join(examples_dir, "attention", "L3-43_mingpt_attention.py"))
    model = mod.Model(192, 2, 0.0, 0.0, 32).to("meta")
    plan = _plan(factc, model, [torch.randn(2, 16, 192, device="meta")], tmp_path)
    assert [p["rule"] for p in plan["patterns"]].count("attention") == 0
    (rej,) = [r for r in plan["rejected"] if r["rule"] == "attention"]
    assert rej["node"] == "softmax"
    assert "buffer %b_bias records no value class" in rej["reason"]


def test_small_examples_compute_causal_attention(examples_dir: str) -> None:
    # The hand-written minGPT block equals the same block with SDPA(is_causal=True).
    mod = _import_example(os.path.join(examples_dir, "attention", "L3-43_mingpt_attention.py"))
    model = mod.Model(192, 2, 0.0, 0.0, 32)
    x = torch.randn(2, 16, 192)
    with torch.no_grad():
        q, k, v = model.c_attn(x).split(192, dim=2)
        heads = [t.view(2, 16, 2, 96).transpose(1, 2) for t in (q, k, v)]
        y = torch.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        want = model.c_proj(y.transpose(1, 2).reshape(2, 16, 192))
        torch.testing.assert_close(model(x), want, rtol=1e-5, atol=1e-5)
