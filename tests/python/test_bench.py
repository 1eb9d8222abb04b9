"""fact.bench's float64 reference: the model the user gave, run with float64 state."""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.nn as nn

from fact.bench import Float64ReferenceError, Timing, float64_reference


class ClosureMlp(nn.Module):
    """KernelBench level 3 #44's spelling: forward reaches submodules through a lambda
    captured in __init__ (a deep copy converted to float64 would still call float32 ones)."""

    def __init__(self) -> None:
        super().__init__()
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(16, 32), act=nn.GELU(), c_proj=nn.Linear(32, 16)))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))
        self.register_buffer("shift", torch.randn(16))

    def forward(self, x):
        return x + self.mlpf(x) + self.shift


def test_the_reference_reaches_submodules_called_through_a_closure() -> None:
    torch.manual_seed(0)
    model = ClosureMlp()
    x = torch.randn(4, 16)
    ref = float64_reference(model, [x], device="cpu")
    assert ref.dtype == torch.float64
    m = model.mlp
    xd = x.double()
    h = torch.nn.functional.gelu(xd @ m.c_fc.weight.double().t() + m.c_fc.bias.double())
    want = xd + h @ m.c_proj.weight.double().t() + m.c_proj.bias.double() + model.shift.double()
    torch.testing.assert_close(ref, want, rtol=1e-12, atol=1e-12)
    # The model's own tensors are left as they were.
    assert model.mlp.c_fc.weight.dtype == torch.float32 and model.shift.dtype == torch.float32
    assert model.mlpf(x).dtype == torch.float32


def test_the_reference_of_a_model_with_tied_weights_is_one_float64_copy() -> None:
    class _Tied(torch.nn.Module):  # GPT-2's habit: lm_head.weight is wte.weight
        def __init__(self) -> None:
            super().__init__()
            self.wte = torch.nn.Embedding(32, 8)
            self.lm_head = torch.nn.Linear(8, 32, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            return self.lm_head(self.wte(idx))

    torch.manual_seed(0)
    model, idx = _Tied(), torch.randint(0, 32, (2, 5))
    ref = float64_reference(model, [idx], device="cpu")
    w = model.wte.weight.double()
    torch.testing.assert_close(ref, w[idx] @ w.t(), rtol=1e-12, atol=1e-12)
    assert model.lm_head.weight is model.wte.weight  # still tied, still float32
    assert model.wte.weight.dtype == torch.float32


def test_a_forward_that_cannot_run_in_float64_is_a_clear_error() -> None:
    class Float32Table(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return self.fc(x) @ torch.ones(8, 8, dtype=torch.float32)  # built in float32 itself

    with pytest.raises(Float64ReferenceError, match=r"could not be computed.*RuntimeError"):
        float64_reference(Float32Table(), [torch.randn(2, 8)], device="cpu")


def test_a_torch_compile_failure_loses_only_its_baseline(monkeypatch) -> None:
    """--inductor on a model torch.compile cannot trace: the row keeps eager and FACT."""
    opt = importlib.import_module("fact.optimize")  # the package exports the function by that name

    def broken_compile(model, **kwargs):
        def run(*args):
            raise RuntimeError("dynamo could not trace this\nsecond line")
        return run

    monkeypatch.setattr(opt.torch, "compile", broken_compile)
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    with pytest.warns(UserWarning, match=r"torch.compile \(default\) failed.*RuntimeError: dynamo could not"):
        t = opt.benchmark(lin, lin, [x], "tf32", trials=20, inductor=True)
    assert set(t) == {"eager_fp32", "eager", "fact"}
    assert all(v.median_ms > 0 for v in t.values())


class _Replay:
    def __init__(self) -> None:
        self.mode, self.resets, self.seen = None, 0, []

    @property
    def enabled(self) -> bool:
        return self.mode is not False

    def reset(self) -> None:
        self.resets += 1


@pytest.mark.parametrize("replay_ms, plain_ms, kept", [(1.9, 2.0, True), (2.1, 2.0, False)])
def test_cuda_graph_replay_is_kept_only_when_it_is_faster(monkeypatch, replay_ms, plain_ms,
                                                          kept) -> None:
    opt = importlib.import_module("fact.optimize")
    module = torch.nn.Linear(4, 4)
    module.replay = _Replay()

    def fake_time(variants, trials, contexts):
        for name in variants:  # each variant runs under its own replay mode
            with contexts[name]():
                module.replay.seen.append((name, module.replay.mode))
        return {"replay": Timing.of([replay_ms] * 20), "plain": Timing.of([plain_ms] * 20)}

    monkeypatch.setattr(opt, "time_variants", fake_time)
    monkeypatch.setattr(opt.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(opt, "inputs_device_type", lambda inputs, model: "cuda")
    got = opt.choose_replay(module, [torch.randn(2, 4)], "tf32")
    assert got == {"replay_ms": replay_ms, "plain_ms": plain_ms, "kept": kept}
    assert module.replay.seen == [("replay", None), ("plain", False)]
    assert module.replay.mode is (None if kept else False)
    assert module.replay.resets == (0 if kept else 1)
