"""The generated module (python/fact/module_gen.py) and its CUDA-graph replay
(python/fact/cuda_graph.py) on CPU: the source a GEMM artifact generates, a family's own call
node (a weight re-laid out at load, outputs as strided views), calls reordered where a kernel
needs a value made after its pattern's output, tracing under torch.compile, and the replay's
warm-up, capture, re-capture and failure paths with a stand-in capture."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from fact.cuda_graph import replay_blocker
from fact.export import export
from fact.families.gemm import FAMILY as GEMM
from fact.log import FactWarning
from fact.module_gen import GenerationError, KernelSite, ModuleBuilder, generate
from fact.runtime import load

from families.test_gemm import _cutlass_artifact, fake_library  # noqa: F401 (fixture)


def test_gemm_artifact_generates_one_kernel_call(tmp_path, fake_library: str) -> None:
    art, model = _cutlass_artifact(tmp_path, fake_library)
    fm = load(art, model)
    src = fm.source()
    assert "linear = self.fact_p0(x, p_fc_weight, p_fc_bias)" in src
    assert "relu = torch.ops.aten.relu.default(linear)" in src
    assert "torch.ops.aten.linear" not in src  # the pattern's node is gone
    assert src.startswith("# FACT module of graph '_Linear': 1 FACT kernel call(s), 1 ATen call(s).")
    assert "# self.fact_p0: gemm kernel fake_host_gemm_f32_tn, replaces linear" in src
    assert fm.aten_nodes() == ["relu"]
    path = fm.write_source(tmp_path)
    assert open(path, encoding="utf-8").read() == src
    # The source is the module that runs: the kernel on host memory, then relu.
    fm.bindings["p0"].device_type = "cpu"
    x = torch.randn(4, 16)
    torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}


def test_the_module_traces_under_torch_compile(tmp_path, fake_library: str) -> None:
    """Dynamo sees the custom op fact::p0 (its fake kernel gives the shape) and the compiled
    module calls the same kernel."""
    art, model = _cutlass_artifact(tmp_path, fake_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    x = torch.randn(4, 16)
    ops: list[str] = []

    def backend(gm: torch.fx.GraphModule, example_inputs):
        ops.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    compiled = torch.compile(fm, backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert "fact.p0.default" in ops
    assert fm.fallback_counts() == {"p0": 0}


# --------------------------------------------------------------- generate() alone

def _graph(nodes: list[dict], inputs: list[str], outputs: list[str]) -> dict:
    """A graph dict of float32 [4, 4] values (docs/02)."""
    t = {"dtype": "float32", "shape": [4, 4], "strides": [4, 1]}
    return {"format": "fact.graph", "version": 1, "name": "G",
            "inputs": [{"name": n, "type": t} for n in inputs], "params": [],
            "nodes": [{"name": n["name"], "op": n["op"],
                       "args": [{"ref": a} if isinstance(a, str) else a for a in n["args"]],
                       "kwargs": {}, "outputs": [{"name": o, "type": t} for o in n.get("outs", [n["name"]])]}
                      for n in nodes],
            "outputs": [{"ref": o} for o in outputs]}


class _Concat(nn.Module):
    """A stand-in merged kernel: x @ w_cat -> [4, 8]."""

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ w


def test_a_family_emits_its_own_call_with_a_load_time_weight_and_views() -> None:
    """What a merged projection needs: two mm nodes replaced by one call on a weight
    concatenated once at load, each original output a strided view of the one result."""
    graph = _graph([{"name": "mm", "op": "aten.mm.default", "args": ["x", "wa"]},
                    {"name": "mm_1", "op": "aten.mm.default", "args": ["x", "wb"]},
                    {"name": "add", "op": "aten.add.Tensor", "args": ["mm", "mm_1"]}],
                   ["x", "wa", "wb"], ["add"])
    kernel = _Concat()

    def emit(builder: ModuleBuilder, site: KernelSite) -> None:
        w = builder.load_time_tensor("w_ab", lambda a, b: torch.cat([a, b], 1), ["wa", "wb"])
        both = builder.call_module(site.target, site.module, ["x", "w_ab"], name="mm_ab")
        assert w is builder.value("w_ab")
        for i, name in enumerate(site.defines):
            view = builder.call_function(torch.ops.aten.slice.Tensor, (both, 1, 4 * i, 4 * i + 4),
                                         name=name)
            builder.define(name, view)

    site = KernelSite("fact_p0", kernel, {"id": "p0", "nodes": ["mm", "mm_1"], "output": "mm"},
                      ["x", "wa", "wb"], ["mm", "mm_1"], emit)
    module, aten, load_time = generate(graph, [site], [])
    assert aten == ["add"] and list(load_time) == ["w_ab"]
    code = module.code
    assert "def forward(self, x, wa, wb, w_ab):" in code
    assert "mm_ab = self.fact_p0(x, w_ab)" in code
    assert "torch.ops.aten.slice.Tensor(mm_ab, 1, 0, 4)" in code
    x, wa, wb = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)
    compute, sources = load_time["w_ab"]
    w_ab = compute(*({"wa": wa, "wb": wb}[s] for s in sources))
    torch.testing.assert_close(module(x, wa, wb, w_ab), x @ wa + x @ wb)


def test_a_kernel_is_placed_after_the_last_value_it_reads() -> None:
    """The kernel replacing neg and add_1 (output add_1) also writes neg's value, which relu
    reads before mul (an input of the kernel) is made: the call moves up to where all it
    reads exists and relu after it, a topological order of the same computation."""
    graph = _graph([{"name": "neg", "op": "aten.neg.default", "args": ["x"]},
                    {"name": "relu", "op": "aten.relu.default", "args": ["neg"]},
                    {"name": "mul", "op": "aten.mul.Tensor", "args": ["relu", "x"]},
                    {"name": "add_1", "op": "aten.add.Tensor", "args": ["neg", "mul"]}],
                   ["x"], ["add_1"])

    class Kernel(nn.Module):
        def forward(self, x, mul):
            return [-x + mul, -x]

    with pytest.raises(GenerationError, match="cannot order"):
        # neg's value is needed by relu, made by the kernel, which needs mul: a cycle.
        generate(graph, [KernelSite("fact_p0", Kernel(), {"id": "p0", "nodes": ["neg", "add_1"],
                                                         "output": "add_1"},
                                    ["x", "mul"], ["add_1", "neg"], _default)], [])
    # Without the cycle (relu reads x), relu and mul come first, then the kernel.
    graph["nodes"][1]["args"] = [{"ref": "x"}]
    module, aten, _ = generate(graph, [KernelSite("fact_p0", Kernel(), {
        "id": "p0", "nodes": ["neg", "add_1"], "output": "add_1"}, ["x", "mul"],
        ["add_1", "neg"], _default)], [])
    assert aten == ["relu", "mul"]
    x = torch.randn(4, 4)
    torch.testing.assert_close(module(x), -x + torch.relu(x) * x)


def _default(builder: ModuleBuilder, site: KernelSite) -> None:
    GEMM.emit(builder, site)


def test_a_pattern_value_read_outside_keeps_its_nodes() -> None:
    """neg is inside the pattern but returned too: it stays an ATen call, the kernel still
    replaces the rest."""
    graph = _graph([{"name": "neg", "op": "aten.neg.default", "args": ["x"]},
                    {"name": "exp", "op": "aten.exp.default", "args": ["neg"]}],
                   ["x"], ["exp", "neg"])

    class Kernel(nn.Module):
        def forward(self, x):
            return torch.exp(-x)

    module, aten, _ = generate(graph, [KernelSite("fact_p0", Kernel(), {
        "id": "p0", "nodes": ["neg", "exp"], "output": "exp"}, ["x"], ["exp"], _default)], [])
    assert aten == ["neg"]
    x = torch.randn(4, 4)
    out = module(x)
    torch.testing.assert_close(out[0], torch.exp(-x))
    torch.testing.assert_close(out[1], -x)


def test_a_node_in_two_patterns_is_an_error() -> None:
    graph = _graph([{"name": "neg", "op": "aten.neg.default", "args": ["x"]}], ["x"], ["neg"])
    sites = [KernelSite(f"fact_{p}", nn.Identity(), {"id": p, "nodes": ["neg"], "output": "neg"},
                        ["x"], ["neg"], _default) for p in ("p0", "p1")]
    with pytest.raises(GenerationError, match="node neg is in patterns p0 and p1"):
        generate(graph, sites, [])


# ----------------------------------------------------------------------- replay

class _StandInCapture:
    """What torch.cuda.CUDAGraph does, on the host: capturing runs fn once on the static
    inputs (its outputs become the static outputs), replaying runs it again into them
    without Python's side effects (the bindings' counters are put back, as a real replay
    never calls them)."""

    captures = 0
    bindings: list = []

    def __init__(self, fn, inputs) -> None:
        type(self).captures += 1
        self.fn, self.inputs = fn, inputs
        self.outputs = fn(inputs)

    def replay(self) -> None:
        counters = [(b, b.fallbacks, dict(b.fallback_reasons)) for b in self.bindings]
        out = self.fn(self.inputs)
        for b, n, reasons in counters:
            b.fallbacks, b.fallback_reasons = n, reasons
        for o, n in zip(self.outputs if isinstance(self.outputs, tuple) else [self.outputs],
                        out if isinstance(out, tuple) else [out]):
            o.copy_(n)


class _Failing:
    def __init__(self, fn, inputs) -> None:
        raise RuntimeError("operation not permitted when stream is capturing")


def _replaying(tmp_path, fake_library: str):
    art, model = _cutlass_artifact(tmp_path, fake_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    fm.replay.device_types = ("cpu",)
    _StandInCapture.captures = 0
    _StandInCapture.bindings = list(fm.bindings.values())
    fm.replay.capture = _StandInCapture
    return fm, model


def test_replay_warms_up_captures_once_and_copies_inputs_in(tmp_path, fake_library: str) -> None:
    fm, model = _replaying(tmp_path, fake_library)
    assert fm.replay.enabled and not fm.replay.blocker
    outs = []
    with torch.no_grad():
        for i in range(4):
            x = torch.randn(4, 16)
            outs.append(fm(x))
            torch.testing.assert_close(outs[-1], model(x), rtol=1e-5, atol=1e-5)
    # Call 1 warms up, call 2 captures and replays, calls 3 and 4 replay.
    assert fm.replay.replays == 3 and _StandInCapture.captures == 1
    assert len({o.data_ptr() for o in outs}) == 4  # copies, not the static output
    # Another shape: warm-up again (it falls back: the plan's shape is [4, 16]), then a new
    # capture whose fallbacks count at each replay.
    with torch.no_grad():
        for _ in range(3):
            x5 = torch.randn(5, 16)
            assert torch.equal(fm(x5), model(x5))
    assert _StandInCapture.captures == 2 and fm.replay.replays == 5
    assert fm.fallback_counts() == {"p0": 3}
    # A binding's state change (the ATen check disabling it) drops the capture.
    fm.bindings["p0"].disabled_reason = "slower than its ATen nodes"
    with torch.no_grad():
        x = torch.randn(4, 16)
        assert torch.equal(fm(x), model(x))
    assert fm.fallback_reasons()["p0"]["slower than its ATen nodes"] == 1


def test_replay_is_off_with_autograd_or_when_asked(tmp_path, fake_library: str) -> None:
    fm, model = _replaying(tmp_path, fake_library)
    for _ in range(3):  # the model's parameters require grad and grad mode is on
        fm(torch.randn(4, 16))
    assert fm.replay.replays == 0
    fm.replay.mode = False
    with torch.no_grad():
        for _ in range(3):
            fm(torch.randn(4, 16))
    assert fm.replay.replays == 0 and not fm.replay.enabled


def test_a_failed_capture_is_said_and_the_module_runs_plainly(tmp_path, fake_library: str) -> None:
    fm, model = _replaying(tmp_path, fake_library)
    fm.replay.capture = _Failing
    with torch.no_grad():
        x = torch.randn(4, 16)
        fm(x)
        with pytest.warns(FactWarning, match="CUDA graph capture failed .*stream is capturing"):
            out = fm(x)
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
        fm(x)
    assert "stream is capturing" in fm.replay.failed and not fm.replay.enabled
    assert fm.replay.replays == 0 and fm.fallback_counts() == {"p0": 0}


def test_replay_blocker_names_what_waits_for_the_device() -> None:
    """(Export refuses data-dependent sizes, so the ops are written into the graph.)"""
    class Plain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * 2

    graph = export(Plain(), [torch.randn(4)])
    assert replay_blocker(graph) == ""
    graph["nodes"][0]["op"] = "aten._local_scalar_dense.default"
    assert replay_blocker(graph) == (f"node {graph['nodes'][0]['name']} "
                                     f"(aten._local_scalar_dense.default) waits for the device")
    graph = export(Plain(), [torch.randn(4)])
    graph["nodes"][0]["kwargs"]["device"] = {"device": "cpu"}
    assert "makes a tensor on cpu" in replay_blocker(graph)
    graph = export(Plain(), [torch.randn(4)])
    graph["inputs"][0]["type"]["shape"] = ["s0"]
    assert replay_blocker(graph) == "input x has a symbolic size (['s0'])"


def test_symbolic_size_arguments_are_computed_per_call() -> None:
    """A graph with symbols (version 2): a view to [{"sym": "4*B"}] reads B once from the
    input dim that is 2*B (x.size(0) // 2), so one module runs every size."""
    t = {"dtype": "float32", "shape": ["2*B", 2], "strides": [2, 1]}
    flat = {"dtype": "float32", "shape": ["4*B"], "strides": [1]}
    graph = {"format": "fact.graph", "version": 2, "name": "G",
             "symbols": {"B": {"min": 1, "max": 64, "seen": [3], "buckets": None}},
             "inputs": [{"name": "x", "type": t}], "params": [],
             "nodes": [{"name": "view", "op": "aten.view.default",
                        "args": [{"ref": "x"}, [{"sym": "4*B"}]], "kwargs": {},
                        "outputs": [{"name": "view", "type": flat}]}],
             "outputs": [{"ref": "view"}]}
    gm, aten, _ = generate(graph, [], [])
    assert aten == ["view"]
    assert "x.size(0)" in gm.code and "floordiv" in gm.code
    for b in (1, 3, 7):
        x = torch.randn(2 * b, 2)
        torch.testing.assert_close(gm(x), x.reshape(-1))
    del graph["inputs"][0]["type"]["shape"][0]
    graph["inputs"][0]["type"]["shape"].insert(0, 6)  # no dim gives B any more
    with pytest.raises(GenerationError, match="symbol B is the size of no input dim"):
        generate(graph, [], [])


def test_a_fallback_reads_a_tuple_output_under_an_identifier() -> None:
    """A kernel's ATen fallback whose input is one output of a multi-output node ("split.0")
    takes it as an argument named split_0 (numbered on when an input already has that name)."""
    from fact.module_gen import generate_nodes
    t = {"dtype": "float32", "shape": [2], "strides": [1]}
    nodes = [{"name": "add", "op": "aten.add.Tensor", "args": [{"ref": "split.0"}, {"ref": "split_0"}],
              "kwargs": {}, "outputs": [{"name": "add", "type": t}]},
             {"name": "relu", "op": "aten.relu.default", "args": [{"ref": "add"}], "kwargs": {},
              "outputs": [{"name": "relu", "type": t}]}]
    gm = generate_nodes(nodes, ["split_0", "split.0"], ["relu"])
    out = gm(torch.tensor([-1.0, 2.0]), torch.tensor([-3.0, 0.5]))
    assert torch.equal(out, torch.tensor([0.0, 2.5]))
    args = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    assert args == ["split_0", "split_0_1"]
