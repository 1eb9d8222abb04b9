"""The torch.compile backend on CPU (python/fact/backend.py), with the stand-in engine
(tests/python/fake_factc.py): registration, subgraphs, graph breaks, reuse across
processes, the registry, and the graphs it leaves as Dynamo gave them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest
import torch

import fact.backend
from fact.export import export
from fact.log import FactWarning
from mini_models import ConvNet, GraphBreak, MiniGPT, mini_gpt_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
# The real engine, as the suite was started with it (the fixtures below swap in the
# stand-in): $FACT_FACTC, else build/factc.
ENGINE = os.environ.get("FACT_FACTC") or os.path.join(ROOT, "build", "factc")


@pytest.fixture(scope="module")
def metadata(tmp_path_factory) -> str:
    """The package metadata pip would install from pyproject.toml (its entry points
    included), in a folder of its own; returns the folder."""
    from setuptools import build_meta
    folder = tmp_path_factory.mktemp("metadata")
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        info = build_meta.prepare_metadata_for_build_wheel(str(folder))
    finally:
        os.chdir(here)
    assert os.path.isfile(folder / info / "entry_points.txt")
    return str(folder)


@pytest.fixture(autouse=True)
def _fresh_dynamo(metadata, monkeypatch):
    """Dynamo reset, and this checkout's metadata first on the path, so that
    ``backend="fact"`` is found through the entry point as an installed package finds it
    (whatever an older install of the package in the environment declares)."""
    from torch._dynamo.backends import registry
    monkeypatch.syspath_prepend(metadata)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([metadata, os.path.join(ROOT, "python")]))
    registry._discover_entrypoint_backends.cache_clear()
    registry._lazy_import.cache_clear()
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def engine(tmp_path, fake_factc, monkeypatch) -> dict:
    """The stand-in engine with a GPU, its command log, a kernel cache, and CPU tensors
    accepted as the kernels' device (what a CUDA device is on a GPU machine)."""
    log = tmp_path / "factc.log"
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    monkeypatch.setenv("FAKE_FACTC_LOG", str(log))
    monkeypatch.setenv("FACT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(fact.backend, "KERNEL_DEVICE_TYPES", ("cuda", "cpu"))
    return {"log": log, "cache": tmp_path / "cache", "factc": fake_factc}


def _plans(out_dir) -> list[str]:
    """``<subgraph>/plan.json`` of each subgraph's folder under ``out_dir``."""
    if not os.path.isdir(out_dir):
        return []
    return sorted(os.path.join(d, "plan.json") for d in os.listdir(out_dir)
                  if os.path.isfile(os.path.join(out_dir, d, "plan.json")))


def _commands(log) -> list[str]:
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def test_the_entry_point_lists_fact_among_dynamos_backends(metadata) -> None:
    (info,) = [d for d in os.listdir(metadata) if d.endswith(".dist-info")]
    eps = open(os.path.join(metadata, info, "entry_points.txt")).read()
    assert "[torch_dynamo_backends]\nfact = fact.backend:fact_backend" in eps
    # A fresh process with the metadata on its path, as after pip install.
    code = ("import torch._dynamo, fact.backend\n"
            "from torch._dynamo.backends.registry import lookup_backend\n"
            "print('fact' in torch._dynamo.list_backends())\n"
            "print(lookup_backend('fact') is fact.backend.fact_backend)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.stdout.split() == ["True", "True"], proc.stderr



def test_mini_gpt_compiles_to_one_subgraph_equal_to_eager(tmp_path, engine) -> None:
    torch.manual_seed(0)
    model, inputs = MiniGPT().eval(), mini_gpt_inputs()
    out_dir = tmp_path / "out"
    with torch.no_grad():
        compiled = torch.compile(model, backend="fact",
                                 options={"precision": "fp32", "out_dir": str(out_dir),
                                          "remainder": "aten"})
        got, want = compiled(*inputs), model(*inputs)
        again = compiled(*inputs)  # the compiled function, no recompile
    assert got.shape == (2, 16, 64)
    assert torch.equal(got, want) and torch.equal(again, want)
    (plan,) = _plans(out_dir)
    work = out_dir / os.path.dirname(plan)
    # discover, realize, compose: once.
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]
    # The subgraph's FACT graph is the model's own export: same ops, the parameters and the
    # causal-mask buffer lifted as parameters and buffers (value class kept).
    graph = json.loads((work / "graph.json").read_text())
    direct = export(model, inputs)
    assert [n["op"] for n in graph["nodes"]] == [n["op"] for n in direct["nodes"]]
    assert sorted((p["kind"], p["type"]["shape"], p.get("value")) for p in graph["params"]) \
        == sorted((p["kind"], p["type"]["shape"], p.get("value")) for p in direct["params"])
    assert [p.get("value") for p in graph["params"] if p["kind"] == "buffer"] == ["tril"] * 2
    # Thirteen GEMMs (the stand-in's rule): 4 linears and 2 matmuls per block, the head.
    manifest = json.loads((work / "artifact" / "manifest.json").read_text())
    assert len(manifest["patterns"]) == 13
    env = json.loads((work / "artifact" / "environment.json").read_text())
    assert (env["gpu"], env["policy"], env["fact"]) == ("Fake GPU", "fp32", "0.1.0")


def test_the_engine_finds_in_the_subgraph_what_it_finds_in_the_model(tmp_path,
                                                                      engine) -> None:
    """The real engine's discovery (no GPU needed) on the backend's subgraph and on the
    model's own export: the same patterns (the causal attention included)."""
    from fact.export import write_graph
    from fact.factc import FactcError, find_factc, run_factc
    try:
        real = find_factc(ENGINE)
    except FactcError:
        pytest.skip("needs the engine (build/factc)")
    torch.manual_seed(0)
    model, inputs = MiniGPT().eval(), mini_gpt_inputs()
    out_dir = tmp_path / "out"
    with torch.no_grad():
        torch.compile(model, backend="fact", options={"out_dir": str(out_dir)})(*inputs)
    (plan,) = _plans(out_dir)
    write_graph(export(model, inputs), tmp_path / "direct.json")
    found = {}
    for name, graph in (("subgraph", out_dir / os.path.dirname(plan) / "graph.json"),
                        ("model", tmp_path / "direct.json")):
        run_factc(real, ["discover", str(graph), "-o", str(tmp_path / f"{name}.plan"),
                         "--policy", "fp32"])
        patterns = json.loads((tmp_path / f"{name}.plan").read_text())["patterns"]
        found[name] = sorted((p["rule"], tuple(p["nodes"]),
                              (p["problem"] or {}).get("mask")) for p in patterns)
    assert found["subgraph"] == found["model"]
    rules = [r for r, _, _ in found["model"]]
    assert rules.count("attention") == 2 and rules.count("gemm") == 9
    assert {m for r, _, m in found["model"] if r == "attention"} == {"causal"}


def test_a_graph_break_makes_two_subgraphs_and_two_plans(tmp_path, engine) -> None:
    torch.manual_seed(0)
    model, x = GraphBreak().eval(), torch.randn(4, 16)
    out_dir = tmp_path / "out"
    with torch.inference_mode():
        got = torch.compile(model, backend="fact", options={"out_dir": str(out_dir),
                                                            "remainder": "aten"})(x)
        want = model(x)
    assert torch.equal(got, want)
    plans = _plans(out_dir)
    assert len(plans) == 2
    ops = sorted(tuple(n["op"] for n in json.loads(
        (out_dir / os.path.dirname(p) / "graph.json").read_text())["nodes"]) for p in plans)
    assert ops == [("aten.linear.default", "aten.mul.Tensor"),
                   ("aten.linear.default", "aten.relu.default")]
    assert _commands(engine["log"]) == ["discover", "realize", "compose"] * 2


_SCRIPT = """
import json, sys, torch
sys.path.insert(0, {here!r})
import fact.backend
from mini_models import MiniGPT, mini_gpt_inputs
fact.backend.KERNEL_DEVICE_TYPES = ("cuda", "cpu")
torch.manual_seed(0)
model, inputs = MiniGPT().eval(), mini_gpt_inputs()
with torch.no_grad():
    got = torch.compile(model, backend="fact", options={{"out_dir": sys.argv[1],
                                                         "remainder": "aten"}})(*inputs)
    print(json.dumps(bool(torch.equal(got, model(*inputs)))))
"""


def _process(tmp_path, out_dir, env) -> bool:
    script = tmp_path / "compile_mini_gpt.py"
    script.write_text(_SCRIPT.format(here=HERE))
    proc = subprocess.run([sys.executable, str(script), str(out_dir)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _registry_marks(out_dir) -> list:
    (plan,) = _plans(out_dir)
    realized = json.loads((out_dir / os.path.dirname(plan) / "realized.json").read_text())
    return [p.get("registry") for p in realized["patterns"]]


def test_a_new_process_reuses_the_artifact_or_hits_the_registry(tmp_path, engine) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert _process(tmp_path, first, os.environ) is True
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]
    assert _registry_marks(first) == [None] * 13  # tuned, and recorded
    # A second process, same folder: the artifact is loaded, factc is not run at all.
    engine["log"].unlink()
    assert _process(tmp_path, first, os.environ) is True
    assert _commands(engine["log"]) == []
    # A second process, a new folder, the same kernel cache: every pattern is a registry
    # hit (nothing tuned again).
    assert _process(tmp_path, second, os.environ) is True
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]
    assert _registry_marks(second) == ["hit (tuned 2026-01-01)"] * 13


def _compile_warnings(model, inputs, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(model, backend="fact", options=options)(*inputs)
    return got, [str(w.message) for w in caught if issubclass(w.category, FactWarning)]


def test_cpu_tensors_run_unchanged_with_one_warning(tmp_path, fake_factc, monkeypatch) -> None:
    log = tmp_path / "factc.log"
    monkeypatch.setenv("FAKE_FACTC_LOG", str(log))
    monkeypatch.setattr(fact.log, "_said", set())
    model, x = GraphBreak().eval(), torch.randn(4, 16)
    with torch.no_grad():
        got, said = _compile_warnings(model, [x], out_dir=str(tmp_path / "out"),
                                      remainder="aten")
        want = model(x)
    assert torch.equal(got, want)
    # Two subgraphs, one warning.
    assert said == ["fact backend: tensors on cpu: FACT kernels run on CUDA devices; move the "
                    "model and its inputs to CUDA; the graph runs as Dynamo gave it"]
    assert not log.exists() and not (tmp_path / "out").exists()


def test_a_graph_that_needs_autograd_runs_unchanged(tmp_path, engine, monkeypatch) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    model, x = GraphBreak(), torch.randn(4, 16)
    got, said = _compile_warnings(model, [x], out_dir=str(tmp_path / "out"), remainder="aten")
    assert said == [
        "fact backend: this graph needs autograd (grad mode is on and a tensor requires grad): "
        "FACT compiles forward/inference only; call the compiled model under torch.no_grad() "
        "or torch.inference_mode(); the graph runs as Dynamo gave it"]
    got.sum().backward()  # gradients flow: Dynamo's own graph ran
    assert model.a.weight.grad is not None and model.a.weight.grad.abs().sum() > 0
    assert _commands(engine["log"]) == []


class _TrainingNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.bn = torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.fc(x))


@pytest.mark.parametrize("remainder,then", [("aten", "the graph runs as Dynamo gave it"),
                                             ("inductor", "Inductor compiles the graph")])
def test_a_graph_that_writes_its_buffers_is_left_to_run_once(tmp_path, engine, monkeypatch,
                                                             remainder, then) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    torch.manual_seed(0)
    model, x = _TrainingNorm().train(), torch.randn(4, 8)
    twin = _TrainingNorm().train()
    twin.load_state_dict(model.state_dict())
    with torch.no_grad():
        got, said = _compile_warnings(model, [x], out_dir=str(tmp_path / "out"),
                                      remainder=remainder)
        want = twin(x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    (text,) = said
    assert "the graph writes to its inputs or buffers (buffer_mutation of bn_num_batches_tracked, " in text
    assert text.endswith(then)
    # The statistics moved once, as in eager: nothing ran the graph a second time.
    assert int(model.bn.num_batches_tracked) == 1
    assert torch.allclose(model.bn.running_mean, twin.bn.running_mean)
    assert _commands(engine["log"]) == []


def test_a_subgraph_without_a_pattern_runs_as_dynamo_gave_it(tmp_path, engine,
                                                             caplog) -> None:
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(2, 3, 8, 8)
    caplog.set_level("INFO", logger="fact")
    with torch.no_grad():
        got = torch.compile(model, backend="fact",
                            options={"out_dir": str(tmp_path / "out"), "remainder": "aten"})(x)
        want = model(x)
    assert torch.equal(got, want)
    assert _commands(engine["log"]) == ["discover"]  # nothing realized
    (line,) = [r.getMessage() for r in caplog.records if "has no FACT pattern" in
               r.getMessage()]
    assert line.endswith("nothing matched: 2 ops stay ATen: aten.conv2d.default x1 (no rule "
                         "matches), aten.relu.default x1 (no rule matches)")


def test_automatic_dynamic_compiles_symbolic_graphs_and_static_sizes_compile(
        tmp_path, engine, monkeypatch) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    model = GraphBreak().eval()
    xs = [torch.randn(b, 16) for b in (4, 8, 5)]
    out_dir = tmp_path / "out"
    with torch.no_grad():
        # dynamic=None: the second batch size makes Dynamo's batch symbolic, and FACT
        # compiles the two symbolic subgraphs (no warning); the third size reuses them.
        compiled = torch.compile(model, backend="fact", options={"out_dir": str(out_dir),
                                                                 "remainder": "aten"})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outs = [compiled(x) for x in xs]
        assert all(torch.equal(o, model(x)) for o, x in zip(outs, xs))
        assert [str(w.message) for w in caught if issubclass(w.category, FactWarning)] == []
        plans = _plans(out_dir)
        assert len(plans) == 4  # batch 4's two static subgraphs, then two symbolic ones
        versions = sorted(json.loads((out_dir / p).read_text())["version"] for p in plans)
        assert versions == [1, 1, 2, 2]
        # dynamic=False: each size is a static graph of its own.
        torch._dynamo.reset()
        static = torch.compile(model, backend="fact", dynamic=False,
                               options={"out_dir": str(out_dir), "remainder": "aten"})
        assert all(torch.equal(static(x), model(x)) for x in xs)
    assert len(_plans(out_dir)) == 8


def test_fake_example_inputs_compile_on_the_first_real_call(tmp_path, engine) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    gm = torch.fx.symbolic_trace(model)  # a graph that holds its own parameters
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(torch.randn(4, 16))]
    out_dir = tmp_path / "out"
    compiled = fact.backend.fact_backend(gm, fake, options={"out_dir": str(out_dir),
                                                            "remainder": "aten"})
    assert _plans(out_dir) == [] and _commands(engine["log"]) == []  # nothing yet
    x = torch.randn(4, 16)
    with torch.no_grad():
        assert torch.equal(compiled(x), model(x))
        assert torch.equal(compiled(x), model(x))
    assert len(_plans(out_dir)) == 1
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]


def test_an_unknown_option_is_named() -> None:
    model = GraphBreak().eval()
    with torch.no_grad(), pytest.raises(Exception, match="unknown option tune_bugdet .*known: "
                                        "ablation_budget_s, bucket_bound, buckets, cache"):
        torch.compile(model, backend="fact", options={"tune_bugdet": 2})(torch.randn(4, 16))


def test_the_compiled_subgraph_runs_under_its_policy() -> None:
    class _User:
        @staticmethod
        def user_inputs(args):
            return list(args)[:1]

    seen = []
    compiled = fact.backend._Compiled(
        lambda x: seen.append(torch.get_float32_matmul_precision()) or x, _User(), tuple,
        "tf32")
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        x = torch.ones(2)
        out = compiled(x, torch.zeros(3))  # the user input, then a parameter
        assert seen == ["high"] and isinstance(out, tuple) and out[0] is x
        assert torch.get_float32_matmul_precision() == "highest"  # restored
    finally:
        torch.set_float32_matmul_precision(before)


def test_mark_dynamic_batch_compiles_one_symbolic_graph(tmp_path, engine) -> None:
    # The MiniGPT-like model with its batch marked dynamic: one subgraph whose FACT graph
    # keeps the batch a symbol (version 2, sizes and view arguments in B), compiled once
    # and run at five batch sizes equal to eager.
    torch.manual_seed(0)
    model = MiniGPT().eval()
    out_dir = tmp_path / "out"
    compiled = torch.compile(model, backend="fact",
                             options={"precision": "fp32", "out_dir": str(out_dir),
                                      "bucket_bound": 64, "remainder": "aten"})
    with torch.no_grad():
        for batch in (4, 2, 3, 9, 40):
            (idx,) = mini_gpt_inputs(batch=batch)
            if batch == 4:
                torch._dynamo.mark_dynamic(idx, 0)
            assert torch.equal(compiled(idx), model(idx)), batch
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]
    (plan,) = _plans(out_dir)
    work = out_dir / os.path.dirname(plan)
    graph = json.loads((work / "graph.json").read_text())
    assert graph["version"] == 2
    ((name, symbol),) = graph["symbols"].items()
    assert symbol["seen"] == [4] and symbol["min"] == 2 and symbol["bound"] == 64
    assert graph["inputs"][0]["type"]["shape"] == [name, 16]
    assert any(a == {"sym": name} for n in graph["nodes"] for arg in n["args"]
               if isinstance(arg, list) for a in arg)  # view(x, [B, 16, ...])
    assert json.loads((work / "plan.json").read_text())["symbols"] == graph["symbols"]
