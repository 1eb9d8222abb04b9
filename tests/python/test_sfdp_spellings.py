"""The attention spellings PyTorch Inductor's authors collected (``_sfdp_pattern_1`` ...
``_27`` in torch/_inductor/fx_passes/fuse_attention.py, shipped with torch), each exported as
a model and discovered by the real engine.

Each spelling is called as a model would call it: q, k, v (and a mask where the spelling takes
one) are inputs with the shapes Inductor traces with, scales are numbers, and dropout has
p = 0. A spelling must come back as one attention pattern covering its softmax; the ones the
attention rule does not take yet are listed in NOT_YET with the reason the plan gives, and a
listed spelling that starts to match fails the test too, so the list only shrinks.
"""

from __future__ import annotations

import inspect
import json
import subprocess

import pytest
import torch

from fact.export import export, write_graph
from fact.factc import FactcError, find_factc

fuse_attention = pytest.importorskip("torch._inductor.fx_passes.fuse_attention")

# Spellings the attention rule does not match yet (docs/03-rules.md, "The attention rule").
NOT_YET: set[str] = {
    "_sfdp_pattern_7",
    "_sfdp_pattern_7_half",
    "_sfdp_pattern_8",
    "_sfdp_pattern_8_half",
    "_sfdp_pattern_9",
    "_sfdp_pattern_9_half",
    "_sfdp_pattern_10",
    "_sfdp_pattern_10_half",
    "_sfdp_pattern_15",
    "_sfdp_pattern_15_half",
    "_sfdp_pattern_16",
    "_sfdp_pattern_16_bs1",
    "_sfdp_pattern_16_half",
    "_sfdp_pattern_16_half_bs1",
    "_sfdp_pattern_16_half_mask_fp32",
    "_sfdp_pattern_16_half_mask_fp32_bs1",
    "_sfdp_pattern_17",
    "_sfdp_pattern_17_half",
    "_sfdp_pattern_18",
    "_sfdp_pattern_18_bs1",
    "_sfdp_pattern_18_half",
    "_sfdp_pattern_18_half_bs1",
    "_sfdp_pattern_19",
    "_sfdp_pattern_19_half",
    "_sfdp_pattern_20",
    "_sfdp_pattern_20_half",
    "_sfdp_pattern_21",
    "_sfdp_pattern_21_bs1",
    "_sfdp_pattern_21_half",
    "_sfdp_pattern_21_half_bs1",
    "_sfdp_pattern_22",
    "_sfdp_pattern_22_bs1",
    "_sfdp_pattern_22_half",
    "_sfdp_pattern_22_half_bs1",
    "_sfdp_pattern_23",
    "_sfdp_pattern_23_bs1",
    "_sfdp_pattern_23_half",
    "_sfdp_pattern_23_half_bs1",
    "_sfdp_pattern_24",
    "_sfdp_pattern_24_half",
    "_sfdp_pattern_25",
    "_sfdp_pattern_25_bs1",
    "_sfdp_pattern_25_half",
    "_sfdp_pattern_25_half_bs1",
    "_sfdp_pattern_26",
    "_sfdp_pattern_26_bs1",
    "_sfdp_pattern_26_half",
    "_sfdp_pattern_26_half_bs1",
    "_sfdp_pattern_27",
    "_sfdp_pattern_27_bs1",
    "_sfdp_pattern_27_half",
    "_sfdp_pattern_27_half_bs1",
}


def _spellings() -> dict[str, tuple]:
    """Name -> (pattern function, example inputs): the inference (dropout p = 0) entries of
    Inductor's own list, float32 and float16, batch 2 and 1."""
    out = {}
    for name, entry in fuse_attention._get_sfdp_patterns(torch.device("cpu")):
        if name.endswith("_training"):
            continue
        out[name.removesuffix("_inference")] = (entry["search_fn"], entry["example_inputs"])
    return out


SPELLINGS = _spellings()


class Spelling(torch.nn.Module):
    """One pattern function as a model: tensors of rank >= 1 are inputs, 0-d ones numbers."""

    def __init__(self, fn, args) -> None:
        super().__init__()
        self.fn = fn
        self.numbers = {i: float(a) for i, a in enumerate(args) if a.dim() == 0}

    def forward(self, *tensors):
        it = iter(tensors)
        n = len(self.numbers) + len(tensors)
        return self.fn(*[self.numbers[i] if i in self.numbers else next(it) for i in range(n)])


def _inputs(args) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    out = []
    for a in args:
        if a.dim() == 0:
            continue
        if a.dtype == torch.bool:
            t = torch.rand(a.shape, generator=g) > 0.2
        else:
            t = torch.randn(a.shape, generator=g, dtype=torch.float32).to(a.dtype)
        out.append(t)
    return out


@pytest.fixture(scope="module")
def factc() -> str:
    try:
        return find_factc()
    except FactcError as exc:
        pytest.skip(f"the engine is not built: {exc}")


def test_the_list_is_inductors_whole_list() -> None:
    numbers = {int(n.split("_")[3]) for n in SPELLINGS}
    assert numbers == set(range(1, 28)), sorted(numbers)
    defined = {n for n, _ in inspect.getmembers(fuse_attention) if n.startswith("_sfdp_pattern_")}
    assert len(defined) == 27


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_is_one_attention_pattern(name, factc, tmp_path) -> None:
    fn, args = SPELLINGS[name]
    model = Spelling(fn, args).eval()
    graph = tmp_path / "graph.json"
    write_graph(export(model, _inputs(args)), graph)
    plan_path = tmp_path / "plan.json"
    policy = "tf32"
    subprocess.run([factc, "discover", str(graph), "--policy", policy, "-o", str(plan_path)],
                   check=True, capture_output=True)
    plan = json.loads(plan_path.read_text())
    found = [p for p in plan["patterns"] if p["rule"] == "attention"]
    softmax = [n["name"] for n in json.loads(graph.read_text())["nodes"] if "softmax" in n["op"]]
    matched = len(found) == 1 and set(softmax) <= set(found[0]["nodes"])
    if name in NOT_YET:
        assert not matched, f"{name} now matches: take it off NOT_YET"
        return
    reasons = [f"{r['node']} ({r['op']}): {r['reason']}" for r in plan.get("rejected", [])]
    assert matched, f"{name}: {len(found)} attention patterns; rejections: {reasons}"
