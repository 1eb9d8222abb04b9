"""Precision policies: the mapping from torch's switch, eager scopes, and the output check."""

from __future__ import annotations

import pytest
import torch

from fact.precision import (TOLERANCE, check_output, default_policy, eager_precision,
                            fact_precision, model_dtype, resolve_policy, tolerance)


@pytest.fixture(autouse=True)
def _restore_precision():
    before = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("torch_setting, policy", [
    ("highest", "fp32"), ("high", "tf32"), ("medium", "tf32")])
def test_default_policy_follows_torch(torch_setting: str, policy: str) -> None:
    torch.set_float32_matmul_precision(torch_setting)
    assert default_policy() == policy
    assert resolve_policy(None) == policy


def test_bf16_only_when_asked_and_unknown_names_rejected() -> None:
    for setting in ("highest", "high", "medium"):
        torch.set_float32_matmul_precision(setting)
        assert default_policy() != "bf16"
    assert resolve_policy("bf16") == "bf16"
    with pytest.raises(ValueError, match="fp16"):
        resolve_policy("fp16")


@pytest.mark.parametrize("policy, setting", [("fp32", "highest"), ("tf32", "high"),
                                             ("bf16", "high")])
def test_eager_scope_sets_and_restores(policy: str, setting: str) -> None:
    torch.set_float32_matmul_precision("medium")
    with eager_precision(policy, device_type="cpu"):
        assert torch.get_float32_matmul_precision() == setting
        assert torch.is_autocast_enabled("cpu") == (policy == "bf16")
    assert torch.get_float32_matmul_precision() == "medium"
    assert not torch.is_autocast_enabled("cpu")
    with fact_precision(policy):
        assert torch.get_float32_matmul_precision() == setting
        assert not torch.is_autocast_enabled("cpu")


def test_bf16_eager_runs_matmul_in_bf16_and_elementwise_in_fp32() -> None:
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    with eager_precision("bf16", device_type="cpu"):
        assert (a @ b).dtype == torch.bfloat16
        assert (a + b).dtype == torch.float32


def test_model_dtype_is_narrow_only_when_everything_is() -> None:
    lin = torch.nn.Linear(4, 4)
    assert model_dtype(lin, [torch.randn(2, 4)]) == torch.float32
    lin = lin.to(torch.bfloat16)
    assert model_dtype(lin, [torch.randn(2, 4, dtype=torch.bfloat16)]) == torch.bfloat16
    # An fp32 input to a bf16 model, or a model with fp32 and bf16 parts, is the policy's.
    assert model_dtype(lin, [torch.randn(2, 4)]) == torch.float32
    mixed = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4).half())
    assert model_dtype(mixed) == torch.float32
    assert model_dtype(torch.nn.Linear(4, 4).half()) == torch.float16


def test_bf16_model_runs_its_own_eager_under_bf16() -> None:
    """A bf16 model's baseline is its own eager: no autocast (docs/00-design.md §4)."""
    with eager_precision("bf16", device_type="cpu", model_dtype=torch.bfloat16):
        assert not torch.is_autocast_enabled("cpu")
        assert torch.get_float32_matmul_precision() == "high"
    with eager_precision("bf16", device_type="cpu", model_dtype=torch.float32):
        assert torch.is_autocast_enabled("cpu")


def test_tolerances() -> None:
    assert TOLERANCE == {"fp32": 1e-5, "tf32": 5e-3, "bf16": 2e-2}
    assert tolerance("fp32") == 1e-5
    assert tolerance("fp32", torch.bfloat16) == 2e-2  # a bf16 output cannot do better
    assert tolerance("tf32", torch.float16) == 5e-3


def _ref() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randn(64, 64, dtype=torch.float64)


def test_check_passes_close_output_and_reports_errors() -> None:
    ref = _ref()
    out = (ref * (1 + 1e-4)).float()
    c = check_output(out, ref, "tf32")
    assert c.ok and c.reason == ""
    assert c.rel_fro_err == pytest.approx(1e-4, rel=1e-2)
    assert c.max_rel_err == pytest.approx(1e-4, rel=1e-2)
    assert c.limit == 5e-3
    c = check_output(out, ref, "fp32")
    assert not c.ok and "exceeds the fp32 limit" in c.reason


def test_check_fails_zeros_constant_nan() -> None:
    ref = _ref()
    zeros = torch.zeros(64, 64)
    c = check_output(zeros, ref, "bf16", limit=10.0)  # even with a huge limit
    assert not c.ok and "trivially wrong" in c.reason
    const = torch.full((64, 64), 0.01)
    assert "constant" in check_output(const, ref, "bf16", limit=10.0).reason
    nan = ref.float().clone()
    nan[3, 4] = float("nan")
    c = check_output(nan, ref, "bf16")
    assert not c.ok and "1 NaN/Inf" in c.reason
    inf = ref.float().clone()
    inf[0, 0] = float("inf")
    assert not check_output(inf, ref, "bf16").ok


def test_nans_are_equal_only_where_the_reference_is_nan() -> None:
    # A fully masked attention row: NaN in the float64 reference and in eager.
    ref = _ref()
    ref[5] = float("nan")
    ref[6, 0] = float("-inf")
    out = ref.float().clone()
    c = check_output(out, ref, "fp32")
    assert c.ok and c.rel_fro_err < 1e-7, c.reason
    zeros_row = out.clone()
    zeros_row[5] = 0.0  # a kernel writing 0 where eager gives NaN
    c = check_output(zeros_row, ref, "fp32")
    assert not c.ok and "64 elements that are not NaN where the float64 reference is NaN" \
        in c.reason
    extra = out.clone()
    extra[7, 7] = float("nan")  # NaN elsewhere is still wrong, whatever the reference has
    c = check_output(extra, ref, "fp32")
    assert not c.ok and "1 NaN/Inf elements where the float64 reference is finite" in c.reason
    flipped = out.clone()
    flipped[6, 0] = float("inf")
    assert "infinities" in check_output(flipped, ref, "fp32").reason


def test_check_constant_reference_and_tuples() -> None:
    ones = torch.ones(4, 4, dtype=torch.float64)
    assert check_output(torch.ones(4, 4), ones, "fp32").ok  # constant ref: constant is right
    ref = _ref()
    c = check_output((ref.float(), ones.float()), (ref, ones), "fp32")
    assert c.ok and c.rel_fro_err < 1e-7
    c = check_output((ref.float(),), (ref, ones), "fp32")
    assert not c.ok and "1 output tensors, reference has 2" in c.reason
    c = check_output(ref[:2].float(), ref, "fp32")
    assert not c.ok and "shape" in c.reason
