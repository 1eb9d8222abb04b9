"""The remainder (python/fact/remainder.py): a FACT module's generated GraphModule compiled
by Inductor around its kernels' custom ops, the fallback to ATen when Inductor fails, and
the manifests of modules with patterns handed back."""

from __future__ import annotations

import warnings

import pytest
import torch

import fact.log
from artifacts import gemm_stub_pattern, linear_stub_artifact
from fact.log import FactWarning
from fact.remainder import REMAINDERS, RemainderRunner, check_remainder, handed_back
from fact.runtime import load


def test_the_modes_and_an_unknown_one() -> None:
    assert REMAINDERS == ("inductor", "aten")
    assert check_remainder("aten") == "aten"
    with pytest.raises(ValueError, match="remainder 'triton': expected one of inductor, aten"):
        check_remainder("triton")


def test_the_stub_kernel_module_compiles_under_inductor_with_the_kernel_opaque(
        tmp_path, build_c_library) -> None:
    from torch._inductor.utils import run_and_get_code
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    plain = load(art, model, remainder="aten")
    fused = load(art, model, remainder="inductor")
    want = plain(x)
    with torch.no_grad():
        got, codes = run_and_get_code(fused, x)
    assert fused.remainder.inductor and fused.remainder.failed == ""
    assert torch.allclose(got, want, rtol=1e-6, atol=1e-6)
    assert torch.allclose(got, model(x), rtol=1e-5, atol=1e-5)
    code = "\n".join(codes)
    # The kernel is one opaque call in Inductor's code; the ReLU after it is Inductor's.
    assert "torch.ops.fact.p0" in code
    assert "aten.relu.default(" not in code and "aten.linear.default(" not in code
    assert fused.fallback_counts()["p0"] >= 1  # the custom op ran the binding (CPU: ATen)


def test_an_inductor_failure_is_said_once_and_the_module_runs_op_by_op(monkeypatch) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
    compiles = []

    def broken(module, args):
        compiles.append(module)

        def run(*args):
            raise RuntimeError("no Triton here\nmore lines")
        return run

    runner = RemainderRunner(gm, "inductor", compile_fn=broken)
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = runner(x), runner(x)
    assert torch.equal(first, gm(x)) and torch.equal(second, gm(x))
    assert runner.failed == "RuntimeError: no Triton here" and not runner.inductor
    assert len(compiles) == 1  # not tried again
    said = [str(w.message) for w in caught if issubclass(w.category, FactWarning)]
    assert said == ["fact: Inductor failed on the module's remainder (RuntimeError: no Triton "
                    "here); its nodes run one ATen op at a time"]


def test_aten_mode_never_compiles() -> None:
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    runner = RemainderRunner(gm, "aten", compile_fn=lambda m, a: pytest.fail("compiled"))
    x = torch.randn(3)
    assert torch.equal(runner(x), torch.relu(x)) and not runner.inductor


def _manifest() -> dict:
    p0, p1 = gemm_stub_pattern(), dict(gemm_stub_pattern(), id="p1")
    vendor = {"id": "p2", "impl": "vendor", "nodes": ["mm"], "output": "mm",
              "tail": {"id": "p2_tail", "impl": "cutlass", "nodes": ["relu"]}}
    return {"format": "fact.manifest", "version": 1, "patterns": [p0, p1, vendor]}


def test_handed_back_marks_the_named_kernels_aten_and_copies() -> None:
    manifest = _manifest()
    out = handed_back(manifest, ["p1", "p2_tail"], "measured slower")
    impls = [(p["id"], p["impl"], p.get("aten_reason")) for p in out["patterns"]]
    assert impls == [("p0", "cutlass", None), ("p1", "aten", "measured slower"),
                     ("p2", "vendor", None)]
    assert out["patterns"][2]["tail"]["impl"] == "aten"
    assert [p["impl"] for p in manifest["patterns"]] == ["cutlass", "cutlass", "vendor"]
    assert manifest["patterns"][2]["tail"]["impl"] == "cutlass"  # the original is untouched
    assert handed_back(None, ["p0"], "x") is None


def test_handed_back_names_an_id_that_is_no_kernel_pattern() -> None:
    with pytest.raises(ValueError, match="no kernel pattern p2, p9 in the manifest"):
        handed_back(_manifest(), ["p0", "p9", "p2"], "x")  # p2 is a vendor pattern


def test_a_module_handing_back_its_pattern_runs_the_aten_nodes(tmp_path,
                                                               build_c_library) -> None:
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    module = load(art, model, remainder="aten")
    back = module.handing_back(["p0"], "measured slower")
    assert back.bindings == {} and back.library is None
    assert back.manifest["patterns"][0]["impl"] == "aten"
    assert module.bindings and module.manifest["patterns"][0]["impl"] == "cutlass"
    assert "linear" in back.aten_nodes() and "linear" not in module.aten_nodes()
    assert torch.equal(back(x), module(x))
    assert back.p_0_weight is module.p_0_weight  # the same tensors, not copies


def test_a_result_is_returned_in_the_layout_the_fake_kernel_declares() -> None:
    from fact.families import family_of
    from fact.kernels import as_declared, declared_strides, new_output
    family = family_of(gemm_stub_pattern())
    t = {"dtype": "float32", "shape": [4, 6], "strides": [1, 4]}
    # A fallback's ATen result may be a permuted view: it comes back contiguous when the
    # family declares contiguous outputs, and is the very tensor when it already is.
    view = torch.arange(24.0).reshape(6, 4).t()
    want = declared_strides(t, family, [4, 6])
    assert want == list(new_output(t, family, torch.device("meta")).stride())
    fixed = as_declared(view, t, family)
    assert list(fixed.stride()) == want and torch.equal(fixed, view)
    same = torch.randn(4, 6)
    assert as_declared(same, t, family) is same


def test_each_kind_of_arguments_compiles_once_up_to_the_limit() -> None:
    from fact.remainder import MAX_KINDS
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    compiled = []

    def stand_in(module, args):
        compiled.append(tuple(args[0].shape))
        return lambda *a: module(*a) + 0  # a new tensor, as compiled code returns

    runner = RemainderRunner(gm, "inductor", compile_fn=stand_in)
    with pytest.warns(FactWarning, match=f"compiled for {MAX_KINDS} kinds of inputs; calls of "
                      f"further kinds run one ATen op at a time"):
        for n in [2, 3, 2, 3] + list(range(4, 4 + MAX_KINDS)):
            x = torch.randn(n)
            assert torch.equal(runner(x), torch.relu(x))
    assert compiled == [(n,) for n in range(2, 2 + MAX_KINDS)] and runner.compiles == MAX_KINDS


def test_several_outputs_come_back_as_the_modules_tuple() -> None:
    from fact.remainder import inductor_compile

    class _Two(torch.nn.Module):
        def forward(self, x):
            h = x * 2
            return h, torch.relu(h)

    gm = torch.fx.symbolic_trace(_Two())
    x = torch.randn(3, 4)
    runner = RemainderRunner(gm, "inductor", compile_fn=inductor_compile)
    out = runner(x)
    assert isinstance(out, tuple) and len(out) == 2 and runner.compiles == 1
    assert torch.allclose(out[0], x * 2) and torch.allclose(out[1], torch.relu(x * 2))


def test_a_call_that_needs_autograd_runs_op_by_op_and_inductor_stays_on() -> None:
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
    runner = RemainderRunner(gm, "inductor", compile_fn=lambda m, a: pytest.fail("compiled"))
    x = torch.randn(2, 4, requires_grad=True)
    runner(x).sum().backward()
    assert x.grad is not None and runner.inductor and runner.compiles == 0
