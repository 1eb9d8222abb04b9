"""Module verification notices references that cannot tell right from wrong (CPU only).

Linear, then (x - 2) * 1.5, then ReLU, with small weights: on uniform [0, 1) inputs every
output is 0, so a module writing zeros would match the reference exactly. verify() then
checks on drawn inputs (randn at scales 1, 10, 100) until the reference is informative.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from fact.optimize import (DRAW_SCALES, draw_inputs, uninformative_reason, verify)


class _SubMulRelu(nn.Module):
    def __init__(self, factor: float = 1.5) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(16, 32)
        with torch.no_grad():
            self.fc.weight.mul_(0.5)
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu((self.fc(x) - 2.0) * self.factor)


class _Zeros(nn.Module):
    """A 'FACT module' whose kernel writes zeros."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(x.shape[0], 32, dtype=x.dtype, device=x.device)


class _Wraps(nn.Module):
    """A 'FACT module' that computes what ``model`` computes (right, or not)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.calls = 0

    def forward(self, *x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.model(*x)


def _inputs() -> list[torch.Tensor]:
    return [torch.rand(64, 16, generator=torch.Generator().manual_seed(1))]


def test_rand_inputs_give_an_uninformative_reference() -> None:
    model = _SubMulRelu()
    with torch.no_grad():
        assert not model(_inputs()[0]).any()
    assert "all 2048 elements equal 0" in uninformative_reason(model(_inputs()[0]))


def test_uninformative_rule() -> None:
    x = torch.randn(1000, dtype=torch.float64)
    assert uninformative_reason(x) == ""
    assert uninformative_reason(torch.full((10, 10), 3.0)).endswith("all 100 elements equal 3")
    mostly = torch.zeros(1000)
    mostly[:9] = torch.arange(1, 10)  # 0.9 % differ from 0
    assert "only 9 of 1000 elements (0.900%) differ from 0" in uninformative_reason(mostly)
    mostly[:10] = torch.arange(1, 11)  # 1 % differ: informative
    assert uninformative_reason(mostly) == ""
    # Every output is judged; single-element and integer outputs are not.
    assert uninformative_reason((x, torch.zeros(5))).startswith("output 1:")
    assert uninformative_reason((x, torch.zeros(1), torch.zeros(5, dtype=torch.int64))) == ""


def test_zeros_module_fails_on_the_drawn_inputs() -> None:
    model = _SubMulRelu()
    checks = verify(_Zeros(), model, _inputs(), "fp32")
    fact = checks["fact"]
    assert not fact.ok
    assert fact.reason.startswith("randn x10: ") and "trivially wrong" in fact.reason
    assert [(d["name"], d["informative"]) for d in checks["draws"]] == [
        ("own inputs", False), ("randn x1", False), ("randn x10", True)]
    # On its own inputs the zeros module matches the all-zero reference exactly.
    assert checks["draws"][0]["fact"]["ok"] and checks["draws"][0]["fact"]["rel_fro_err"] == 0


def test_right_module_passes_and_reports_the_extra_draw() -> None:
    model = _SubMulRelu()
    fact_module = _Wraps(model)
    checks = verify(fact_module, model, _inputs(), "fp32")
    assert checks["fact"].ok, checks["fact"].reason
    draws = checks["draws"]
    assert [d["name"] for d in draws] == ["own inputs", "randn x1", "randn x10"]
    assert "all 2048 elements equal 0" in draws[0]["reason"]
    assert draws[1]["scale"] == 1.0 and "fact" not in draws[1]  # not checked: uninformative
    assert draws[2]["informative"] and draws[2]["fact"]["ok"] and draws[2]["fallbacks"] is None
    assert fact_module.calls == 2  # own inputs and randn x10
    assert checks["eager"].ok and checks["fact"].rel_fro_err < 1e-6


def test_module_wrong_only_where_the_reference_is_informative_fails() -> None:
    model = _SubMulRelu()
    checks = verify(_Wraps(_SubMulRelu(factor=1.4)), model, _inputs(), "fp32")
    assert not checks["fact"].ok
    assert checks["fact"].reason.startswith("randn x10: relative Frobenius error")


def test_no_informative_draw_fails_with_a_clear_reason() -> None:
    class _AlwaysZero(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 32)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(-self.fc(x).abs())

    model = _AlwaysZero()
    checks = verify(_Wraps(model), model, _inputs(), "fp32")
    assert not checks["fact"].ok
    assert "cannot tell right from wrong on any input tried" in checks["fact"].reason
    assert [d["name"] for d in checks["draws"]] == ["own inputs"] + [
        f"randn x{s:g}" for s in DRAW_SCALES]
    assert not any(d["informative"] for d in checks["draws"])


def test_informative_own_inputs_need_no_draws() -> None:
    model = nn.Linear(16, 32)
    checks = verify(_Wraps(model), model, [torch.randn(8, 16)], "fp32")
    assert checks["fact"].ok and checks["fact"].reason == ""
    assert [(d["name"], d["informative"]) for d in checks["draws"]] == [("own inputs", True)]


def test_draws_keep_layout_and_are_deterministic() -> None:
    a = torch.rand(16, 8).t()  # column-major view
    idx = torch.arange(4)
    d1 = draw_inputs([a, idx, 3.0], 10.0)
    assert d1[0].shape == a.shape and d1[0].stride() == a.stride()
    assert d1[1] is idx and d1[2] == 3.0
    d2 = draw_inputs([a, idx, 3.0], 1.0)
    assert torch.allclose(d1[0], 10.0 * d2[0])
    assert torch.equal(draw_inputs([a], 10.0)[0], d1[0])
    assert d1[0].std().item() == pytest.approx(10.0, rel=0.3)


def test_draws_keep_attention_masks() -> None:
    # A boolean mask passes through; an additive mask keeps its -inf (the keys it removes).
    keep = torch.rand(6, 6) > 0.5
    add = torch.zeros(6, 6)
    add[:, 3] = float("-inf")
    q = torch.randn(2, 6, 8)
    d = draw_inputs([q, keep, add], 10.0)
    assert d[1] is keep
    assert torch.isneginf(d[2][:, 3]).all() and torch.isfinite(d[2][:, :3]).all()
    assert not torch.equal(d[2][:, :3], add[:, :3]) and not torch.equal(d[0], q)


class _MaskedAttention(nn.Module):
    """Explicit softmax attention under a keep mask: a row without keys is NaN."""

    def forward(self, q, k, v, keep):
        att = (q @ k.transpose(-2, -1)).masked_fill(~keep, float("-inf"))
        return torch.softmax(att, dim=-1) @ v


def test_fully_masked_rows_verify_when_fact_matches_eager() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 6, 8, generator=g) for _ in range(3))
    keep = torch.ones(6, 6, dtype=torch.bool)
    keep[4] = False
    model = _MaskedAttention()
    checks = verify(_Wraps(model), model, [q, k, v, keep], "fp32")
    assert checks["fact"].ok, checks["fact"].reason
    assert checks["fact_vs_eager"].ok

    class _ZeroRows(nn.Module):  # writes 0 where every key is masked, as SDPA does
        def forward(self, *a):
            return torch.nan_to_num(model(*a), nan=0.0)

    checks = verify(_ZeroRows(), model, [q, k, v, keep], "fp32")
    assert not checks["fact"].ok
    assert "16 elements that are not NaN where the float64 reference is NaN" in \
        checks["fact"].reason


class _ZeroHead(nn.Module):
    """torchvision's ViT habit: a classifier head zero-initialized, so every output is the
    head's bias (zero) whatever the input."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Linear(16, 24)
        self.head = nn.Linear(24, 8)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.body(x)))


class _Scaled(nn.Module):
    """A 'FACT module' over the same tensors that is wrong by ``factor`` in the body."""

    def __init__(self, model: nn.Module, factor: float) -> None:
        super().__init__()
        self.model, self.factor = model, factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.model
        return m.head(torch.tanh(m.body(x) * self.factor))


def test_a_zero_initialized_head_is_verified_with_drawn_weights_and_restored() -> None:
    from fact.weight_draws import constant_parameters
    model = _ZeroHead()
    assert list(constant_parameters(model)) == ["head.weight", "head.bias"]
    checks = verify(_Wraps(model), model, [torch.randn(8, 16)], "fp32")
    assert checks["fact"].ok, checks["fact"].reason
    names = [(d["name"], d["informative"]) for d in checks["draws"]]
    assert names == [("own inputs", False)] + [(f"randn x{s:g}", False) for s in DRAW_SCALES] \
        + [("randn x1, drawn weights (head.weight, head.bias)", True)]
    # Restored: the head is zero again.
    assert not model.head.weight.any() and not model.head.bias.any()


def test_drawn_weights_expose_a_module_wrong_behind_a_zero_head() -> None:
    model = _ZeroHead()
    checks = verify(_Scaled(model, 1.3), model, [torch.randn(8, 16)], "fp32")
    assert not checks["fact"].ok
    assert checks["fact"].reason.startswith("randn x1, drawn weights (head.weight, head.bias): "
                                            "relative Frobenius error")
    assert not model.head.weight.any()


def test_drawn_weights_write_inference_tensors_and_restore_them() -> None:
    from fact.weight_draws import drawn_weights
    with torch.inference_mode():
        model = _ZeroHead()
    assert model.head.weight.is_inference()
    with drawn_weights(model) as names, torch.inference_mode():
        assert names == ["head.weight", "head.bias"] and bool(model.head.weight.any())
    with torch.inference_mode():
        assert not model.head.weight.any() and not model.head.bias.any()
