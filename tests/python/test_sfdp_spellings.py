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

fuse_attention = pytest.importorskip("torch._inductor.fx_passes.fuse_attention")

# Spellings the attention rule does not match yet (docs/03-rules.md, "The attention rule"):
# none. A spelling that stops matching fails the test; one that cannot be matched for a reason
# goes here with the reason.
NOT_YET: set[str] = set()

# The probability every spelling with a dropout_p argument is called with in
# test_active_dropout_is_not_attention (Inductor's own training value).
ACTIVE_DROPOUT = 0.113377


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

    def __init__(self, fn, args, dropout_p: float | None = None) -> None:
        super().__init__()
        self.fn = fn
        self.numbers = {i: float(a) for i, a in enumerate(args) if a.dim() == 0}
        if dropout_p is not None:
            self.numbers[_dropout_index(fn)] = dropout_p

    def forward(self, *tensors):
        it = iter(tensors)
        n = len(self.numbers) + len(tensors)
        return self.fn(*[self.numbers[i] if i in self.numbers else next(it) for i in range(n)])


def _dropout_index(fn) -> int | None:
    """The position of a spelling's dropout_p argument, or None when it has none."""
    names = list(inspect.signature(fn).parameters)
    return names.index("dropout_p") if "dropout_p" in names else None


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


def test_the_list_is_inductors_whole_list() -> None:
    numbers = {int(n.split("_")[3]) for n in SPELLINGS}
    assert numbers == set(range(1, 28)), sorted(numbers)
    defined = {n for n, _ in inspect.getmembers(fuse_attention) if n.startswith("_sfdp_pattern_")}
    assert len(defined) == 27


def _discover(model, args, factc, tmp_path) -> tuple[dict, bool]:
    """The plan of `model` exported with `args`, and whether one attention pattern covers
    its softmax."""
    graph = tmp_path / "graph.json"
    write_graph(export(model, _inputs(args)), graph)
    plan_path = tmp_path / "plan.json"
    subprocess.run([factc, "discover", str(graph), "--policy", "tf32", "-o", str(plan_path)],
                   check=True, capture_output=True)
    plan = json.loads(plan_path.read_text())
    found = [p for p in plan["patterns"] if p["rule"] == "attention"]
    softmax = [n["name"] for n in json.loads(graph.read_text())["nodes"] if "softmax" in n["op"]]
    return plan, len(found) == 1 and set(softmax) <= set(found[0]["nodes"])


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_is_one_attention_pattern(name, factc, tmp_path) -> None:
    fn, args = SPELLINGS[name]
    plan, matched = _discover(Spelling(fn, args).eval(), args, factc, tmp_path)
    if name in NOT_YET:
        assert not matched, f"{name} now matches: take it off NOT_YET"
        return
    reasons = [f"{r['node']} ({r['op']}): {r['reason']}" for r in plan.get("rejected", [])]
    assert matched, f"{name}: {len(found)} attention patterns; rejections: {reasons}"


def _training_spellings() -> dict[str, tuple]:
    """Name -> (pattern function, example inputs) of Inductor's training entries whose
    function takes dropout_p (the inference entries bind it to 0)."""
    out = {}
    for name, entry in fuse_attention._get_sfdp_patterns(torch.device("cpu")):
        if name.endswith("_training") and _dropout_index(entry["search_fn"]) is not None:
            out[name.removesuffix("_training")] = (entry["search_fn"], entry["example_inputs"])
    return out


TRAINING = _training_spellings()
WITH_DROPOUT = sorted(TRAINING)


def test_most_spellings_take_a_dropout() -> None:
    assert len(WITH_DROPOUT) >= 30, WITH_DROPOUT


@pytest.mark.parametrize("name", WITH_DROPOUT)
def test_active_dropout_is_not_attention(name, factc, tmp_path) -> None:
    """Called with dropout_p > 0 (dropout in training mode), no spelling is attention: the
    kernel has no dropout, and the plan says why."""
    fn, args = TRAINING[name]
    plan, matched = _discover(Spelling(fn, args, ACTIVE_DROPOUT).eval(), args, factc, tmp_path)
    assert not matched, f"{name} with dropout_p={ACTIVE_DROPOUT} matched as attention"
    reasons = [r["reason"] for r in plan.get("rejected", []) if r["rule"] == "attention"]
    assert any("dropout" in r for r in reasons), reasons
