"""Narrowed values in the runtime (python/fact/narrowing.py; docs/05-composition.md,
"Narrowed values") on CPU: the manifest's "narrowed" is checked, a narrowed artifact whose
patterns all run as ATen (vendor, aten, or a kernel that falls back) computes the model
with those values rounded to bf16 at the narrowed points, the generated module casts
exactly where the rule says, and a narrowed parameter is converted once at build."""

from __future__ import annotations

import json
import os

import pytest
import torch
import torch.nn as nn

from artifacts import GEMM_STUB_SOURCE, write_artifact
from fact.export import export
from fact.kernels import new_output
from fact.module_gen import KernelSite, default_emit, generate
from fact.module_report import write_module_report
from fact.narrowing import (Narrowed, convert, is_narrowed_linear, keeps_stored, narrowed_fallback,
                            narrowed_linear, narrowed_summary)
from fact.runtime import ArtifactError, FactModule, load

from families.test_gemm import fake_library  # noqa: F401 (fixture)
from families.test_gemm_merged import _merged_pattern, _TwoProjections
from test_buckets import _bucketed_artifact

#: The values the tests narrow: the first GEMM's output, its views, the second GEMM's weight.
NARROWED = ["linear", "split.0", "split.1", "view", "transpose", "p_proj_weight"]


class _Model(nn.Module):
    """Two GEMMs; the first one's output is read by views, by the second GEMM and by ops
    that do not round (matmul through a transpose, mean)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.proj = nn.Linear(16, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        a, b = h.split(16, -1)
        y = self.proj(h.view(8, 16))
        z = torch.matmul(a.transpose(0, 1), b)
        return torch.relu(y) + z.sum() + h.mean()


def _bf16(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.bfloat16).float()


def _reference(model: _Model, x: torch.Tensor) -> torch.Tensor:
    """The model with the narrowed values rounded to bf16 where they are made."""
    with torch.no_grad():
        h = _bf16(model.fc(x))  # linear; its views split.0, split.1, view, transpose follow
        a, b = h.split(16, -1)
        y = torch.nn.functional.linear(h.view(8, 16), _bf16(model.proj.weight))
        z = torch.matmul(a.transpose(0, 1), b)
        return torch.relu(y) + z.sum() + h.mean()


def _gemm(pid: str, node: str, operands: dict, impl: str, m: int, n: int, bias: bool) -> dict:
    """A GEMM pattern; ``impl`` cutlass names the stand-in library's kernel ``stub``."""
    p = {"id": pid, "rule": "gemm", "abi": "gemm", "nodes": [node], "output": node,
         "operands": operands, "impl": impl, "workspace_bytes": 0, "verified": True,
         "problem": {"kind": "gemm", "m": m, "n": n, "k": 16, "l": 1, "layout_a": "row",
                     "layout_b": "col", "lda": 16, "ldb": 16, "ldd": n, "batch_stride_a": 0,
                     "batch_stride_b": 0, "batch_stride_d": 0, "bias": "n" if bias else None,
                     "alpha": 1.0, "beta": 1.0 if bias else 0.0,
                     "dtype_a": "bfloat16", "dtype_b": "bfloat16", "dtype_d": "float32"}}
    if impl == "cutlass":
        p.update(kernel="stub_gemm_sm90a", symbol="stub")
    else:
        p.update(kernel="cublas_bf16", symbol=None)
    return p


def _patterns(impl: str) -> list[dict]:
    return [_gemm("p0", "linear", {"a": "x", "b": "p_fc_weight", "bias": "p_fc_bias"}, impl,
                  4, 32, True),
            _gemm("p1", "linear_1", {"a": "view", "b": "p_proj_weight"}, impl, 8, 8, False)]


def _artifact(tmp_path, patterns: list[dict], narrowed: list | None = None,
              lib: str | None = None) -> tuple[str, _Model, torch.Tensor]:
    torch.manual_seed(0)
    model, x = _Model().eval(), torch.randn(4, 16)
    art = write_artifact(tmp_path, export(model, [x]), patterns, lib)
    path = os.path.join(art, "manifest.json")
    manifest = json.load(open(path))
    manifest["policy"] = "bf16"
    manifest["narrowed"] = ([{"value": v, "dtype": "bfloat16"} for v in NARROWED]
                            if narrowed is None else narrowed)
    with open(path, "w") as f:
        json.dump(manifest, f)
    return art, model, x


@pytest.fixture
def stub_library(tmp_path, build_c_library) -> str:
    src = tmp_path / "stub.c"
    src.write_text(GEMM_STUB_SOURCE)
    return build_c_library("gemm/abi.h", str(src), "libstub.so")


# ----------------------------------------------------------------- the manifest

@pytest.mark.parametrize("narrowed, message", [
    ({"value": "linear"}, r"narrowed: expected a list"),
    (["linear"], r"narrowed\[0\]: expected an object"),
    ([{"dtype": "bfloat16"}], r'narrowed\[0\]: missing "value"'),
    ([{"value": 3, "dtype": "bfloat16"}], r"narrowed\[0\]\.value: expected a name"),
    ([{"value": "linear"}], r'narrowed\[0\]\.dtype: expected "bfloat16" or "float16", found null'),
    ([{"value": "linear", "dtype": "float64"}],
     r"narrowed\[0\]\.dtype: expected .* found a string 'float64'"),
    ([{"value": "view", "dtype": "bfloat16"}, {"value": "view", "dtype": "float16"}],
     r'narrowed\[1\]\.value: "view" is narrowed twice'),
])
def test_a_malformed_narrowed_member_is_refused_naming_it(tmp_path, narrowed, message) -> None:
    art, model, _ = _artifact(tmp_path, [], narrowed)
    with pytest.raises(ArtifactError, match=message) as info:
        load(art, model)
    assert "manifest.json" in str(info.value)


@pytest.mark.parametrize("value, message", [
    ("add_1", "narrowed\\[0\\] \\('add_1'\\): a graph output cannot be narrowed"),
    ("x", "narrowed\\[0\\] \\('x'\\): a graph input cannot be narrowed"),
    ("no_such_value", "narrowed\\[0\\] \\('no_such_value'\\): no such value in the graph"),
])
def test_a_narrowed_value_that_does_not_fit_the_graph_is_refused(tmp_path, value, message) -> None:
    art, model, _ = _artifact(tmp_path, [], [{"value": value, "dtype": "bfloat16"}])
    with pytest.raises(ArtifactError, match=message):
        load(art, model)


def test_a_value_whose_graph_dtype_is_not_float32_is_refused(tmp_path) -> None:
    class _Argmax(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) + torch.argmax(x, -1, keepdim=True)

    model, x = _Argmax().eval(), torch.randn(2, 4)
    graph = export(model, [x])
    argmax = next(n["name"] for n in graph["nodes"] if "argmax" in n["op"])
    art = write_artifact(tmp_path, graph, [])
    path = os.path.join(art, "manifest.json")
    manifest = dict(json.load(open(path)), narrowed=[{"value": argmax, "dtype": "float16"}])
    json.dump(manifest, open(path, "w"))
    with pytest.raises(ArtifactError, match=f"{argmax}.*graph dtype is int64, only float32"):
        load(art, model)


# ------------------------------------------------------------ running as ATen

@pytest.mark.parametrize("impl", ["vendor", "aten", None])
def test_all_aten_patterns_compute_the_model_rounded_at_the_narrowed_values(tmp_path, impl) -> None:
    art, model, x = _artifact(tmp_path, _patterns(impl) if impl else [])
    fm = load(art, model)
    out = fm(x)
    assert out.dtype == torch.float32  # the graph output's dtype
    assert torch.equal(out, _reference(model, x))
    # Rounding changes the result, so the reference above tells narrowed from not.
    assert (out - model(x)).abs().max() > 1e-3
    assert set(fm.narrowed) == set(NARROWED)
    assert fm.narrowed["view"] == Narrowed(torch.bfloat16, torch.float32)


def test_kernels_that_fall_back_read_and_return_the_narrowed_dtypes(tmp_path, stub_library) -> None:
    """Both GEMMs are cutlass patterns whose kernel never runs on CPU tensors: each call
    runs the pattern's ATen nodes, which take the narrowed tensors as they are and return
    linear's value in bf16, as the kernel would write it."""
    art, model, x = _artifact(tmp_path, _patterns("cutlass"), lib=stub_library)
    fm = load(art, model)
    p0, p1 = fm.bindings["p0"], fm.bindings["p1"]
    assert p0.out_type["dtype"] == "bfloat16" and p1.out_type["dtype"] == "float32"
    assert p0.expected["p_fc_weight"]["dtype"] == "float32"
    assert p1.expected["view"]["dtype"] == "bfloat16"
    assert p1.expected["p_proj_weight"]["dtype"] == "bfloat16"
    assert p1.expected["view"]["shape"] == [8, 16] and p1.expected["view"]["strides"] == [16, 1]
    assert new_output(p0.out_type, p0.family, x.device).dtype == torch.bfloat16
    out = fm(x)
    assert torch.equal(out, _reference(model, x)) and out.dtype == torch.float32
    assert fm.fallback_counts() == {"p0": 1, "p1": 1}
    y = p0.run_fallback([x, model.fc.weight, model.fc.bias], "test")
    assert y.dtype == torch.bfloat16 and torch.equal(y.float(), _bf16(model.fc(x)))
    w = fm.fact_bf16_p_proj_weight
    v = _bf16(model.fc(x)).view(8, 16).to(torch.bfloat16)
    z = p1.run_fallback([v, w], "test")
    assert z.dtype == torch.float32 and torch.equal(z, torch.nn.functional.linear(v.float(), w.float()))


def test_the_custom_ops_fake_kernel_gives_the_narrowed_dtype(tmp_path, stub_library) -> None:
    art, model, x = _artifact(tmp_path, _patterns("cutlass"), lib=stub_library)
    fm = load(art, model, cuda_graph=False)
    dtypes: dict[str, torch.dtype] = {}

    def backend(gm: torch.fx.GraphModule, example_inputs):
        for n in gm.graph.nodes:
            if n.op == "call_function" and str(n.target).startswith("fact."):
                dtypes[str(n.target)] = n.meta["example_value"].dtype
        return gm.forward

    with torch.no_grad():
        out = torch.compile(fm, backend=backend, fullgraph=True)(x)
    assert dtypes == {"fact.p0.default": torch.bfloat16, "fact.p1.default": torch.float32}
    assert torch.equal(out, _reference(model, x))


# ------------------------------------------------------------ the generated code

def _source_lines(art: str, model: _Model) -> list[str]:
    """The loaded module's source, one statement per line (FX's ``; x = None`` dropped)."""
    return [line.split(";")[0].strip() for line in load(art, model).source().splitlines()]


def test_the_module_casts_exactly_where_the_rule_says(tmp_path) -> None:
    lines = _source_lines(*_artifact(tmp_path, _patterns("vendor"))[:2])
    # The GEMM as ATen writes fp32; its narrowed value is that result rounded once.
    assert "linear_bf16 = linear.to(torch.bfloat16)" in lines
    # Views run on the stored bf16 tensor (their outputs are narrowed too): no cast.
    assert "split = torch.ops.aten.split.Tensor(linear_bf16, 16, -1)" in lines
    assert "view = torch.ops.aten.view.default(linear_bf16, [8, 16])" in lines
    assert "transpose = torch.ops.aten.transpose.int(split_0, 0, 1)" in lines
    # A linear of two narrowed operands (the vendor path's bf16 GEMM) reads them as stored
    # and accumulates in fp32 (narrowed_linear): no cast back.
    assert "linear_1 = fact_narrowing_narrowed_linear(view, fact_bf16_p_proj_weight)" in lines
    # Other ATen nodes read narrowed values cast back to float32, each cast made once.
    assert "matmul = torch.ops.aten.matmul.default(transpose_f32, split_1_f32)" in lines
    assert "mean = torch.ops.aten.mean.default(linear_f32)" in lines
    assert "linear_f32 = linear_bf16.to(torch.float32)" in lines
    casts = [line for line in lines if ".to(torch." in line]
    assert len(casts) == 4, casts  # linear_bf16 and three casts back (transpose, split.1,
    # linear); nothing else is cast, and the output is returned as computed
    assert "return add_1" in lines
    assert ("# stored in bf16: 6 values (1 parameter converted at load): linear, split.0, "
            "split.1, view, transpose, p_proj_weight") in lines


def test_kernel_calls_take_and_make_narrowed_tensors_as_they_are(tmp_path, stub_library) -> None:
    lines = _source_lines(*_artifact(tmp_path, _patterns("cutlass"), lib=stub_library)[:2])
    assert "linear = self.fact_p0(x, p_fc_weight, p_fc_bias)" in lines
    assert "linear_1 = self.fact_p1(view, fact_bf16_p_proj_weight)" in lines
    assert "view = torch.ops.aten.view.default(linear, [8, 16])" in lines
    assert "linear_f32 = linear.to(torch.float32)" in lines
    assert not any(".to(torch.bfloat16)" in line for line in lines)


def test_a_narrowed_value_an_identity_returns_is_returned_in_its_graph_dtype() -> None:
    """The graph returns alias(t); the canonical form dropped the alias, so the module returns
    t, which is narrowed: it is cast back, as every graph output is returned."""
    f32 = {"dtype": "float32", "shape": [4, 4], "strides": [4, 1]}

    def node(name: str, op: str, *refs: str) -> dict:
        return {"name": name, "op": op, "args": [{"ref": r} for r in refs], "kwargs": {},
                "outputs": [{"name": name, "type": f32}]}

    graph = {"format": "fact.graph", "version": 1, "name": "G", "params": [],
             "inputs": [{"name": "x", "type": f32}, {"name": "w", "type": f32}],
             "nodes": [node("mm", "aten.mm.default", "x", "w"), node("t", "aten.t.default", "mm"),
                       node("alias", "aten.alias.default", "t")],
             "outputs": [{"ref": "alias"}]}
    manifest = {"patterns": [], "dropped": [{"node": "alias", "same_as": "t"}],
                "narrowed": [{"value": "mm", "dtype": "bfloat16"}, {"value": "t", "dtype": "bfloat16"}]}
    fm = FactModule(graph, {}, manifest)
    assert fm.dropped_nodes == ["alias"]
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    out = fm(x, w)
    assert out.dtype == torch.float32 and torch.equal(out, _bf16(x @ w).t())
    assert "t_f32 = t.to(torch.float32)" in fm.source()


# ------------------------------------------------------------ parameters at load

def test_a_narrowed_parameter_is_converted_once_when_the_module_is_built(tmp_path) -> None:
    art, model, x = _artifact(tmp_path, _patterns("aten"))
    fm = load(art, model)
    w = fm.fact_bf16_p_proj_weight
    assert w.dtype == torch.bfloat16 and not w.requires_grad
    assert torch.equal(w, model.proj.weight.detach().to(torch.bfloat16))
    assert w.stride() == model.proj.weight.stride()
    assert fm.p_proj_weight is model.proj.weight  # the parameter itself stays as it was
    assert "fact_bf16_p_proj_weight" not in dict(fm.named_parameters())
    first = fm(x)
    assert fm.fact_bf16_p_proj_weight.data_ptr() == w.data_ptr()  # not made per call
    # A weight changed in place after load is not seen: the module was built for the old one.
    with torch.no_grad():
        model.proj.weight.add_(1.0)
    assert torch.equal(fm(x), first)


def test_a_table_made_at_load_from_a_narrowed_buffer_reads_it_converted() -> None:
    """A kernel input computed once at load (fact.load_time) from a narrowed buffer: the table's
    nodes read the converted buffer cast back, and the narrowed table is stored in bf16."""
    def node(name: str, op: str, *args) -> dict:
        return {"name": name, "op": op, "args": list(args), "kwargs": {},
                "outputs": [{"name": name, "type": None}]}

    graph = {"format": "fact.graph", "version": 1, "name": "G",
             "inputs": [{"name": "x", "type": None}],
             "params": [{"name": "b_inv_freq", "kind": "buffer"}],
             "nodes": [node("pos", "aten.arange.default", 8),
                       node("col", "aten.unsqueeze.default", {"ref": "pos"}, 1),
                       node("freqs", "aten.mul.Tensor", {"ref": "col"}, {"ref": "b_inv_freq"}),
                       node("cos", "aten.cos.default", {"ref": "freqs"}),
                       node("y", "aten.mul.Tensor", {"ref": "x"}, {"ref": "cos"})],
             "outputs": [{"ref": "y"}]}

    class Kernel(nn.Module):
        def forward(self, x: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
            assert cos.dtype == torch.bfloat16  # the kernel reads the table as stored
            return x * cos.float()

    bf16 = Narrowed(torch.bfloat16, torch.float32)
    site = KernelSite("fact_p0", Kernel(), {"id": "p0", "nodes": ["y"], "output": "y"},
                      ["x", "cos"], ["y"], default_emit, ["cos"])
    module, aten, load_time = generate(graph, [site], ["b_inv_freq"],
                                       {"b_inv_freq": bf16, "cos": bf16})
    assert aten == [] and list(load_time) == ["fact_bf16_b_inv_freq", "fact_table_cos"]
    assert load_time["fact_table_cos"][1] == ["fact_bf16_b_inv_freq"]
    tensors = {"b_inv_freq": torch.rand(4)}
    for name, (compute, sources) in load_time.items():  # as the runtime does, in order
        tensors[name] = compute(*(tensors[s] for s in sources))
    table = tensors["fact_table_cos"]
    want = _bf16(torch.cos(torch.arange(8)[:, None] * _bf16(tensors["b_inv_freq"])))
    assert table.dtype == torch.bfloat16 and torch.equal(table.float(), want)
    x = torch.randn(8, 4)
    assert torch.equal(module(x, *tensors.values()), x * want)


def test_convert_keeps_strides_and_copies() -> None:
    t = torch.randn(16, 8).t()
    c = convert(torch.bfloat16)(t)
    assert c.dtype == torch.bfloat16 and c.stride() == (1, 8)
    assert torch.equal(c.float(), _bf16(t))
    same = torch.randn(3, dtype=torch.bfloat16)
    assert convert(torch.bfloat16)(same).data_ptr() != same.data_ptr()


def test_a_merged_gemm_concatenates_the_converted_weights(tmp_path, fake_library) -> None:
    """Narrowed member weights: the weight concatenated at load is made of the bf16 tensors,
    the binding expects it in bf16, and the family's own fallback (a linear over it) reads it
    cast back to float32 and writes float32 outputs, as the kernel would."""
    torch.manual_seed(0)
    model, x = _TwoProjections().eval(), torch.randn(4, 16)
    art = write_artifact(tmp_path, export(model, [x]), [_merged_pattern()], fake_library)
    path = os.path.join(art, "manifest.json")
    manifest = dict(json.load(open(path)), narrowed=[
        {"value": "p_q_weight", "dtype": "bfloat16"}, {"value": "p_k_weight", "dtype": "bfloat16"}])
    json.dump(manifest, open(path, "w"))
    fm = load(art, model)
    assert fm.fact_p0_b.dtype == torch.bfloat16 and fm.fact_p0_bias.dtype == torch.float32
    assert fm.bindings["p0"].expected["fact_p0_b"]["dtype"] == "bfloat16"
    q, k = fm(x)  # the kernel runs on CUDA only: the fallback
    assert fm.fallback_counts() == {"p0": 1}
    w = torch.cat([_bf16(model.q.weight), _bf16(model.k.weight)]).detach()
    d = torch.nn.functional.linear(x, w) + 1.0 * torch.cat([model.q.bias, model.k.bias]).detach()
    assert q.dtype == k.dtype == torch.float32
    assert torch.equal(q, d[:, :8]) and torch.equal(k, d[:, 8:])


def test_a_bucketed_pattern_writes_its_narrowed_output_at_every_size(tmp_path, build_c_library) -> None:
    """Symbolic sizes: each size's binding of the bucketed GEMM expects to write linear in
    bf16, its fallbacks (the vendor bucket's ATen ops, a refused kernel) return it so, and
    the view the graph returns reads it cast back."""
    art, model = _bucketed_artifact(tmp_path, build_c_library)
    path = os.path.join(art, "manifest.json")
    manifest = dict(json.load(open(path)), narrowed=[{"value": "linear", "dtype": "bfloat16"}])
    json.dump(manifest, open(path, "w"))
    fm = load(art, model)
    binding = fm.bindings["p0"]
    assert binding.out_type["dtype"] == "bfloat16"
    for b in (3, 12, 20):  # a kernel bucket, the vendor bucket, a kernel bucket
        x = torch.randn(b, 4, 16)
        out = fm(x)
        assert out.dtype == torch.float32
        assert torch.equal(out, _bf16(model.fc(x).detach()).view(4 * b, 8))
        per_size = binding.binding_for(b)[1]
        assert per_size is None or per_size.out_type == {"dtype": "bfloat16", "shape": [b, 4, 8],
                                                         "strides": [32, 8, 1]}
    assert fm.fallback_counts() == {"p0": 2}  # the kernels run on CUDA only


def test_merged_outputs_narrowed_unlike_each_other_are_refused(tmp_path, fake_library) -> None:
    """One kernel result is viewed as both members' outputs: they must be stored alike."""
    class _Both(_TwoProjections):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k = super().forward(x)
            return q.sum() + k.sum()

    model, x = _Both().eval(), torch.randn(4, 16)
    art = write_artifact(tmp_path, export(model, [x]), [_merged_pattern()], fake_library)
    path = os.path.join(art, "manifest.json")
    manifest = dict(json.load(open(path)), narrowed=[{"value": "linear_1", "dtype": "bfloat16"}])
    json.dump(manifest, open(path, "w"))
    with pytest.raises(ArtifactError, match="p0: its kernel writes one float32 result, but "
                                            "linear_1 defined from it are narrowed otherwise"):
        load(art, model)
    manifest["narrowed"].append({"value": "linear", "dtype": "bfloat16"})
    json.dump(manifest, open(path, "w"))
    fm = load(art, model)  # both narrowed: one bf16 result
    assert fm.bindings["p0"].out_type["dtype"] == "bfloat16"
    out = fm(x)
    w = torch.cat([model.q.weight, model.k.weight]).detach()
    d = _bf16(torch.nn.functional.linear(x, w) + 1.0 * torch.cat([model.q.bias, model.k.bias]).detach())
    assert torch.equal(out, d[:, :8].sum() + d[:, 8:].sum())


# ------------------------------------------------------------ the rule's pieces

def test_keeps_stored_for_layout_and_shape_nodes_stored_like_their_source() -> None:
    n = {"bf": Narrowed(torch.bfloat16, torch.float32), "bf2": Narrowed(torch.bfloat16, torch.float32),
         "h": Narrowed(torch.float16, torch.float32)}

    def node(op: str, src: str, out: str) -> dict:
        return {"op": op, "args": [{"ref": src}, 1], "outputs": [{"name": out}]}

    assert keeps_stored(node("aten.view.default", "bf", "bf2"), n)
    assert keeps_stored(node("aten.reshape.default", "bf", "bf2"), n)
    assert keeps_stored(node("aten.sym_size.int", "bf", "s"), n)
    assert not keeps_stored(node("aten.view.default", "bf", "plain"), n)  # output not narrowed
    assert not keeps_stored(node("aten.view.default", "plain", "bf"), n)  # source not narrowed
    assert not keeps_stored(node("aten.view.default", "h", "bf"), n)  # fp16 into bf16
    assert not keeps_stored(node("aten.mul.Tensor", "bf", "bf2"), n)  # computes
    assert not keeps_stored(node("aten.view.dtype", "bf", "bf2"), n)  # reinterprets the bytes


def test_a_family_fallback_reads_graph_dtypes_and_returns_the_stored_one() -> None:
    seen: list[torch.dtype] = []

    def fallback(t):
        seen.extend(x.dtype for x in t)
        return t[0] @ t[1]

    a, w = torch.randn(2, 4).to(torch.bfloat16), torch.randn(4, 3)
    run = narrowed_fallback(fallback, ["bfloat16", "float32"], ["float32", "float32"],
                            "bfloat16", "float32")
    out = run([a, w])
    assert seen == [torch.float32, torch.float32] and out.dtype == torch.bfloat16
    assert torch.equal(out, (a.float() @ w).to(torch.bfloat16))
    assert narrowed_fallback(fallback, ["float32"], ["float32"], "float32", "float32") is fallback


# ------------------------------------------------------------ the report

def test_the_module_report_lists_the_narrowed_values(tmp_path) -> None:
    art, _, _ = _artifact(tmp_path, _patterns("vendor"))
    manifest = json.load(open(os.path.join(art, "manifest.json")))
    assert narrowed_summary(manifest) == "stored in bf16: 6 values"
    manifest["narrowed"].append({"value": "relu", "dtype": "float16"})
    graph = json.load(open(os.path.join(art, "graph.json")))
    assert narrowed_summary(manifest, graph) == ("stored in bf16: 6 values (1 parameter converted "
                                                 "at load); in f16: 1 value (0 parameters "
                                                 "converted at load)")
    assert narrowed_summary({"patterns": []}) == ""
    manifest["narrowed"].pop()
    row = {"problem": "m", "policy": "bf16", "verified": True}
    write_module_report(art, row, {}, {}, manifest)
    report = open(os.path.join(art, "report.md")).read()
    assert "- Narrowed: stored in bf16: 6 values (1 parameter converted at load)\n" in report


def test_a_linear_of_two_narrowed_operands_accumulates_in_fp32() -> None:
    """The vendor path's GEMM on narrowed operands: their bf16 values, an fp32 result, the
    fp32 bias added; not for a linear with one operand in fp32."""
    torch.manual_seed(1)
    x, w, b = torch.randn(2, 3, 16).to(torch.bfloat16), torch.randn(8, 16).to(torch.bfloat16), torch.randn(8)
    y = narrowed_linear(x, w, b)
    assert y.dtype == torch.float32 and y.shape == (2, 3, 8)
    want = torch.nn.functional.linear(x.double(), w.double(), b.double())
    assert (y.double() - want).abs().max() < 1e-5 * want.abs().max()
    bf16 = Narrowed(torch.bfloat16, torch.float32)
    node = {"op": "aten.linear.default", "args": [{"ref": "a"}, {"ref": "w"}], "kwargs": {},
            "outputs": [{"name": "y"}]}
    assert is_narrowed_linear(node, {"a": bf16, "w": bf16})
    assert not is_narrowed_linear(node, {"a": bf16})
    assert not is_narrowed_linear({**node, "op": "aten.matmul.default"}, {"a": bf16, "w": bf16})
