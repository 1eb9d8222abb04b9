"""The ATen check (python/fact/aten_check.py): a kernel is timed against its own ATen nodes in
the module and disabled when they are faster. The stand-in attention library runs on host
memory, so the bindings are pointed at the CPU."""

from __future__ import annotations

import time

import torch

from attention_cases import mingpt_artifact
from fact.aten_check import aten_check_patterns, check_aten_paths
from fact.runtime import load


def test_patterns_checked_are_marked_or_attention() -> None:
    manifest = {"patterns": [
        {"id": "p0", "rule": "attention", "impl": "cutlass"},
        {"id": "p1", "rule": "gemm", "impl": "cutlass"},
        {"id": "p2", "rule": "gemm", "impl": "cutlass", "aten_check": "module"},
        {"id": "p3", "rule": "attention", "impl": "vendor"}]}
    assert aten_check_patterns(manifest) == ["p0", "p2"]


def _cpu_module(tmp_path, lib):
    art, model = mingpt_artifact(tmp_path, lib)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    return fm, model


def test_kernel_slower_than_its_aten_nodes_is_disabled(tmp_path, attention_library: str) -> None:
    fm, model = _cpu_module(tmp_path, attention_library)
    b = fm.bindings["p0"]
    x = torch.randn(2, 8, 32)
    # ATen answers at once (its result computed beforehand): the kernel cannot be faster.
    b.record_inputs = True
    with torch.no_grad():
        fm(x)
    cached = b.fallback(b.recorded_inputs)
    b.recorded_inputs = None
    b.fallback = lambda inputs: cached
    result = check_aten_paths(fm, [x], "fp32", trials=20)
    assert set(result) == {"p0"} and result["p0"]["kept"] is False
    assert result["p0"]["aten_ms"] < result["p0"]["kernel_ms"]
    assert fm.disabled_patterns()["p0"].startswith("its ATen nodes measured faster in this module")
    before = b.fallbacks
    with torch.no_grad():
        fm(x)
    assert b.fallbacks == before + 1  # the module now runs the ATen nodes


def test_kernel_faster_than_its_aten_nodes_is_kept(tmp_path, attention_library: str) -> None:
    fm, model = _cpu_module(tmp_path, attention_library)
    b = fm.bindings["p0"]
    slow = b.fallback

    def slow_aten(inputs):
        time.sleep(0.02)  # 20 ms: far above the stand-in kernel on this small problem
        return slow(inputs)

    b.fallback = slow_aten
    x = torch.randn(2, 8, 32)
    result = check_aten_paths(fm, [x], "fp32", trials=20)
    assert result["p0"]["kept"] is True and result["p0"]["aten_ms"] >= 20.0
    assert result["p0"]["kernel_ms"] < result["p0"]["aten_ms"]
    assert fm.disabled_patterns() == {}
    assert b.recorded_inputs is None and b.record_inputs is False
    with torch.no_grad():
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert b.fallbacks == 0
