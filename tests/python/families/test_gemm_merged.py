"""Merged projections in the runtime (python/fact/families/gemm_merged.py), on CPU with the
host-memory stand-in GEMM of test_gemm.py: the kernel's arguments (N = the members' sum, the
concatenated weight and bias), the members' outputs as strided views of its one result, the
weight concatenated once at load, the ATen fallback on a shape mismatch, and a member that
does not fit its problem refused at load."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from fact.export import export
from fact.runtime import ArtifactError, load

from families.test_gemm import fake_library  # noqa: F401 (fixture)


class _TwoProjections(nn.Module):
    """q and k of the same x, returned as they are: one GEMM with N = 8 + 4."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k = nn.Linear(16, 8), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q(x), self.k(x)


def _merged_pattern(n_q: int = 8, n_k: int = 4) -> dict:
    """The manifest entry discovery's merge writes for _TwoProjections (x of [4, 16])."""
    merged = [{"output": "linear", "b": "p_q_weight", "bias": "p_q_bias", "n": n_q, "offset": 0},
              {"output": "linear_1", "b": "p_k_weight", "bias": "p_k_bias", "n": n_k,
               "offset": n_q}]
    n = n_q + n_k
    return {"id": "p0", "rule": "gemm", "nodes": ["linear", "linear_1"], "output": "linear",
            "operands": {"a": "x", "b": "p_q_weight", "bias": "p_q_bias",
                         "b1": "p_k_weight", "bias1": "p_k_bias"},
            "problem": {"kind": "gemm", "m": 4, "n": n, "k": 16, "l": 1, "layout_a": "row",
                        "layout_b": "col", "lda": 16, "ldb": 16, "ldd": n,
                        "batch_stride_a": 0, "batch_stride_b": 0, "batch_stride_d": 0,
                        "bias": "n", "alpha": 1.0, "beta": 1.0, "merged": merged},
            "impl": "cutlass", "kernel": "fake_host_gemm_f32_tn", "symbol": "fk",
            "workspace_bytes": 0, "verified": True}


def _load(tmp_path, lib: str, pattern: dict | None = None):
    torch.manual_seed(0)
    model = _TwoProjections()
    graph = export(model, [torch.randn(4, 16)])
    fm = load(write_artifact(tmp_path, graph, [pattern or _merged_pattern()], lib), model)
    fm.bindings["p0"].device_type = "cpu"  # the stand-in kernel runs on host memory
    lib_handle = ctypes.CDLL(os.path.join(tmp_path, "artifact", "libfact_kernels.so"))
    return fm, model, lib_handle


def _last(lib: ctypes.CDLL, name: str, kind=ctypes.c_longlong) -> int:
    return kind.in_dll(lib, name).value


def test_one_gemm_over_the_concatenated_weight_its_outputs_strided_views(tmp_path,
                                                                         fake_library) -> None:
    fm, model, lib = _load(tmp_path, fake_library)
    x = torch.randn(4, 16)
    q, k = fm(x)
    assert fm.fallback_counts() == {"p0": 0}
    want_q, want_k = model(x)
    torch.testing.assert_close(q, want_q, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k, want_k, rtol=1e-5, atol=1e-5)
    # One kernel call with N = 12, ldb = K, ldd = N ...
    assert (_last(lib, "fk_last_n"), _last(lib, "fk_last_ldb"), _last(lib, "fk_last_ldd")) == (12, 16, 12)
    # ... on the concatenated weight and bias, the module's buffers made at load.
    assert _last(lib, "fk_last_b", ctypes.c_void_p) == fm.fact_p0_b.data_ptr()
    assert _last(lib, "fk_last_bias", ctypes.c_void_p) == fm.fact_p0_bias.data_ptr()
    # Each output is a view of the one [4, 12] result: row stride 12, k 8 columns in.
    assert q.stride() == (12, 1) and k.stride() == (12, 1)
    assert q.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
    assert (q.storage_offset(), k.storage_offset()) == (0, 8)
    src = fm.source()
    assert "fact_p0 = self.fact_p0(x, fact_p0_b, fact_p0_bias)" in src
    assert "linear_1 = torch.ops.aten.slice.Tensor(fact_p0, -1, 8, 12)" in src
    assert "aten.linear" not in src and "aten.cat" not in src


def test_the_weight_is_concatenated_once_at_load(tmp_path, fake_library) -> None:
    fm, model, lib = _load(tmp_path, fake_library)
    w, b = fm.fact_p0_b, fm.fact_p0_bias
    assert torch.equal(w, torch.cat([model.q.weight, model.k.weight], 0)) and w.is_contiguous()
    assert torch.equal(b, torch.cat([model.q.bias, model.k.bias], 0))
    assert not w.requires_grad and "fact_p0_b" in dict(fm.named_buffers())
    for _ in range(2):  # every call reads the same buffer: nothing is built per call
        fm(torch.randn(4, 16))
        assert _last(lib, "fk_last_b", ctypes.c_void_p) == w.data_ptr()
    assert fm.fact_p0_b is w and fm.fallback_counts() == {"p0": 0}


def test_a_shape_mismatch_falls_back_to_aten(tmp_path, fake_library) -> None:
    fm, model, _ = _load(tmp_path, fake_library)
    x = torch.randn(5, 16)  # the plan has M = 4
    q, k = fm(x)
    want_q, want_k = model(x)
    torch.testing.assert_close(q, want_q, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k, want_k, rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 1}
    assert "x has shape [5, 16], the plan assumed [4, 16]" in fm.bindings["p0"].last_fallback_reason
    assert q.stride() == (12, 1)  # still views of the fallback's one [5, 12] result


def test_a_member_that_does_not_fit_its_problem_is_refused_at_load(tmp_path, fake_library) -> None:
    with pytest.raises(ArtifactError, match="member linear_1: shape \\[4, 4\\] at offset 8 "
                                            "does not follow \\[4\\] \\+ \\[5\\]"):
        _load(tmp_path, fake_library, _merged_pattern(n_k=5))


def test_the_merged_call_traces_under_torch_compile(tmp_path, fake_library) -> None:
    fm, model, _ = _load(tmp_path, fake_library)
    ops: list[str] = []

    def backend(gm: torch.fx.GraphModule, example_inputs):
        ops.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    x = torch.randn(4, 16)
    q, k = torch.compile(fm, backend=backend, fullgraph=True)(x)
    torch.testing.assert_close(k, model(x)[1], rtol=1e-5, atol=1e-5)
    assert "fact.p0.default" in ops and fm.fallback_counts() == {"p0": 0}


class _QkvBlock(nn.Module):
    """Three projections of one x whose outputs only ATen ops read (golden
    merge_qkv_same_a's graph): discovery merges them into one GEMM, N = 64 + 32 + 32."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(64, 64), nn.Linear(64, 32), nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(16, 2, 32).sum(1)
        return torch.cat([q, self.k(x), self.v(x)], 1)


def test_generated_module_of_merged_qkv_projections(repo_root, factc, tmp_path,
                                                    fake_library) -> None:
    """The real engine plans the merge; the generated module (golden
    tests/golden/module/merged_qkv_projections.py.txt, FACT_UPDATE_GOLDEN=1 rewrites it) makes
    the concatenated weight and bias at load, calls the stand-in GEMM once and reads q, k, v
    as views; it gives the block's eager output."""
    torch.manual_seed(0)
    model, x = _QkvBlock(), torch.randn(16, 64)
    graph = export(model, [x])
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "-o",
                    str(tmp_path / "plan.json")], check=True, capture_output=True)
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert [len(p["problem"].get("merged", [])) for p in plan["patterns"]] == [3]
    patterns = [{"id": p["id"], "rule": p["rule"], "nodes": p["nodes"], "output": p["output"],
                 "operands": p["operands"], "problem": p["problem"], "impl": "cutlass",
                 "kernel": "fake_host_gemm_f32_tn", "symbol": "fk", "workspace_bytes": 0,
                 "verified": True} for p in plan["patterns"]]
    fm = load(write_artifact(tmp_path, graph, patterns, fake_library), model)
    fm.bindings["p0"].device_type = "cpu"
    text = fm.source()
    golden = os.path.join(repo_root, "tests", "golden", "module", "merged_qkv_projections.py.txt")
    if os.environ.get("FACT_UPDATE_GOLDEN") == "1":
        with open(golden, "w", encoding="utf-8") as f:
            f.write(text)
    with open(golden, encoding="utf-8") as f:
        assert text == f.read(), f"the generated module differs from {golden}"
    assert text.count("self.fact_p0(") == 1 and text.count("aten.slice.Tensor") == 3
    with torch.no_grad():
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}
