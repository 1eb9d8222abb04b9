"""The attention family (python/fact/families/attention.py) in the runtime, on CPU: FactAttentionArgs is filled from the
actual q/k/v strides and the problem's output strides, and the runtime path runs end to end
against a host-memory stand-in attention library (tests/python/fake_attention.c, built from
src/families/attention/abi.h) that computes attention through the ABI."""

from __future__ import annotations

import ctypes
import json
import math
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from attention_cases import (attn_artifact, attn_pattern, attn_problem, discover_plan, last_args,
                             mingpt_artifact, mingpt_qkv)
from fact.families.attention import (FACT_ATTN_FLAG_EMPTY_ROW_ZERO, FactAttentionArgs,
                                    causal_buffers, check_pattern, mask_strides, summary,
                                    tril_mismatch)
from fact.export import export
from fact.runtime import ArtifactError, load


def test_attention_args_struct_matches_the_c_header(attention_library: str) -> None:
    lib = ctypes.CDLL(attention_library)
    for fn in ("fa_sizeof_args", "fa_field_count", "fa_field_offset"):
        getattr(lib, fn).restype = ctypes.c_size_t
    lib.fa_field_offset.argtypes = [ctypes.c_size_t]
    fields = [f[0] for f in FactAttentionArgs._fields_]
    assert ctypes.sizeof(FactAttentionArgs) == lib.fa_sizeof_args()
    assert len(fields) == lib.fa_field_count()
    for i, name in enumerate(fields):
        assert getattr(FactAttentionArgs, name).offset == lib.fa_field_offset(i), name


def test_views_of_one_qkv_tensor_fill_the_args_field_by_field(tmp_path,
                                                              attention_library: str) -> None:
    art, model = mingpt_artifact(tmp_path, attention_library)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    assert binding.family.name == "attention"
    assert binding.input_names == ["transpose_1", "transpose", "transpose_2", "b_bias"]
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        q, k, v = mingpt_qkv(model, x)
    base = q.untyped_storage().data_ptr()
    assert q.untyped_storage().data_ptr() == k.untyped_storage().data_ptr() == \
        v.untyped_storage().data_ptr()
    o = torch.empty(2, 8, 32)
    a = binding.args([q, k, v, fm.b_bias], o)
    assert (a.batch, a.heads, a.kv_heads, a.seq_q, a.seq_k, a.head_dim) == (2, 4, 4, 8, 8, 8)
    # q, k, v start 0, C and 2C floats into the projection's rows of 3C.
    assert (a.q, a.k, a.v) == (base, base + 32 * 4, base + 64 * 4)
    for p in "qkv":
        assert (getattr(a, f"{p}_batch_stride"), getattr(a, f"{p}_head_stride"),
                getattr(a, f"{p}_row_stride")) == (768, 8, 96)
    # O is the [B, T, C] output: O[b, h, t, :] at b*T*C + h*D + t*C.
    assert a.o == o.data_ptr()
    assert (a.o_batch_stride, a.o_head_stride, a.o_row_stride) == (256, 8, 32)
    assert a.mask is None
    assert (a.mask_batch_stride, a.mask_head_stride, a.mask_row_stride) == (0, 0, 0)
    assert a.scale == pytest.approx(1 / math.sqrt(8), rel=1e-7) and a.flags == 0


def test_mingpt_attention_runs_the_kernel_end_to_end(tmp_path, attention_library: str) -> None:
    art, model = mingpt_artifact(tmp_path, attention_library)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    # Every replaced node is skipped; the projections stay ATen ops.
    assert fm.aten_nodes() == ["linear", "split", "view", "transpose", "view_1", "transpose_1",
                               "view_2", "transpose_2", "linear_1"]
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        want = model(x)
        # CPU tensors while the kernel wants CUDA: ATen fallback, counted with the reason.
        assert torch.equal(fm(x), want)
        assert fm.fallback_reasons() == {"p0": {
            "transpose_1 is on cpu, the kernel runs on cuda": 1}}
        binding.device_type = "cpu"  # host memory is the stand-in's device
        out = fm(x)
    assert fm.fallback_counts() == {"p0": 1}
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    last = last_args(art)
    assert (last.q_batch_stride, last.q_head_stride, last.q_row_stride) == (768, 8, 96)
    assert (last.o_batch_stride, last.o_head_stride, last.o_row_stride) == (256, 8, 32)
    assert ctypes.c_longlong.in_dll(ctypes.CDLL(os.path.join(art, "libfact_kernels.so")),
                                    "fa_last_workspace_bytes").value == 64


def test_altered_tril_buffer_runs_the_aten_nodes(tmp_path, attention_library: str) -> None:
    art, model = mingpt_artifact(tmp_path, attention_library)
    graph = json.loads(open(os.path.join(art, "graph.json")).read())
    assert [p.get("value") for p in graph["params"] if p["name"] == "b_bias"] == ["tril"]
    with torch.no_grad():
        model.bias[0, 0, 1, 5] = 1.0  # after export: key 5 visible from query 1
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    reason = fm.disabled_patterns()["p0"]
    assert "buffer b_bias is no longer lower-triangular" in reason
    assert "1 of its 256 elements differ from tril(ones(16, 16))" in reason
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        want = model(x)
        assert torch.equal(fm(x), want)  # the ATen nodes, with the altered buffer
        assert fm.fallback_reasons() == {"p0": {reason: 1}}
        # Restored in place and re-checked: the kernel runs again.
        model.bias[0, 0, 1, 5] = 0.0
        assert fm.check_causal_buffers() == {}
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 1}


def test_unmarked_buffer_of_a_causal_pattern_is_checked_too(tmp_path,
                                                            attention_library: str) -> None:
    # A graph without export's "value": "tril" marker: the causal pattern's buffer is
    # found through its nodes (the slices and the comparison read it).
    art, model = mingpt_artifact(tmp_path, attention_library, mark_tril=False)
    assert load(art, model).disabled_patterns() == {}
    with torch.no_grad():
        model.bias.fill_(1.0)
    fm = load(art, model)
    assert "b_bias is no longer lower-triangular" in fm.disabled_patterns()["p0"]


def test_causal_buffer_selection_and_tril_check() -> None:
    params = {"b_bias": {"kind": "buffer", "value": "tril"}, "b_other": {"kind": "buffer"},
              "p_w": {"kind": "parameter"}}
    causal = {"mask": "causal"}
    assert causal_buffers(causal, ["q", "b_other", "b_bias", "b_bias"], params) == ["b_bias"]
    assert causal_buffers(causal, ["q", "b_other", "p_w"], params) == ["b_other"]
    assert causal_buffers({"mask": "keep"}, ["b_bias"], params) == []
    # The plan names the proof's buffer: checked even when the pattern's nodes do not read it.
    named = {"mask": "causal", "causal_buffer": "b_bias"}
    assert causal_buffers(named, ["q"], params) == ["b_bias"]
    # SDPA's is_causal needs no buffer: a K/V cache buffer it reads is no mask.
    assert causal_buffers({"mask": "causal", "form": "sdpa"}, ["b_other"], params) == []
    assert tril_mismatch(torch.tril(torch.ones(4, 6)).view(1, 1, 4, 6)) == ""
    assert tril_mismatch(torch.tril(torch.ones(5, 5, dtype=torch.bool))) == ""
    assert "differ" in tril_mismatch(2 * torch.tril(torch.ones(5, 5)))
    assert "differ" in tril_mismatch(torch.ones(5, 5))
    assert "dimension" in tril_mismatch(torch.ones(5))
    assert "leading dimensions" in tril_mismatch(torch.tril(torch.ones(2, 4, 4)))
    assert "meta" in tril_mismatch(torch.ones(4, 4, device="meta"))


def test_shared_mask_chain_is_rechecked_for_both_patterns(tmp_path, attention_library: str) -> None:
    # One `bias[:, :, :T, :T] == 0` read by two attentions stays outside both patterns; the
    # plan still names b_bias, so changing the buffer after export disables both kernels.
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))

        @staticmethod
        def attend(q, k, v, m):
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(8))
            return F.softmax(att.masked_fill(m, float("-inf")), dim=-1) @ v

        def forward(self, q, k, v):
            m = self.bias[:, :, :8, :8] == 0
            return self.attend(self.attend(q, k, v, m), k, v, m)

    model = Two()
    x = [torch.randn(2, 2, 8, 8) for _ in range(3)]
    graph = export(model, x)
    plan = discover_plan(tmp_path, graph)
    pats = [p for p in plan["patterns"] if p["rule"] == "attention"]
    assert len(pats) == 2 and all(p["problem"]["causal_buffer"] == "b_bias" for p in pats)
    assert all("eq" not in p["nodes"] for p in pats)  # the shared chain stays ATen
    art = attn_artifact(tmp_path, graph, [attn_pattern(p["nodes"], p["output"], p["operands"],
                                                       p["problem"], "fa_causal", pid=p["id"])
                                          for p in pats], attention_library)
    with torch.no_grad():
        i = torch.arange(16)
        model.bias.copy_(((i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < 2)).float()
                         .view(1, 1, 16, 16))  # a band, no longer the causal triangle
    fm = load(art, model)
    assert sorted(fm.disabled_patterns()) == sorted(p["id"] for p in pats)
    for b in fm.bindings.values():
        b.device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(*x), model(*x), rtol=1e-5, atol=1e-5)



# ------------------------------------------------------------------ SDPA, masks, GQA

class _Sdpa(nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class _DropMask(nn.Module):
    """Scores with ``masked_fill(drop, -inf)``: True removes a key."""

    def forward(self, q, k, v, drop):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        return F.softmax(att.masked_fill(drop, float("-inf")), dim=-1) @ v


class _Gqa(nn.Module):
    """Grouped-query attention: each of the 2 K/V heads serves 3 query heads."""

    def forward(self, q, k, v):
        k = k.repeat_interleave(3, dim=1)
        v = v.repeat_interleave(3, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _whole_graph_artifact(tmp_path, model: nn.Module, inputs: list[torch.Tensor], lib: str,
                          problem: dict, operands: dict, symbol: str) -> str:
    """An artifact whose one attention pattern is every node of ``model``'s graph."""
    graph = export(model, inputs)
    nodes = [n["name"] for n in graph["nodes"]]
    pat = attn_pattern(nodes, nodes[-1], operands, problem, symbol)
    return attn_artifact(tmp_path, graph, [pat], lib)


_QKVM = {"q": "q", "k": "k", "v": "v", "mask": "mask"}
_BHTD = [4 * 6 * 8, 6 * 8, 8]  # O of [2, 4, 6, 8], contiguous


def _sdpa_inputs(mask: torch.Tensor) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return [torch.randn(2, 4, 6, 8, generator=g) for _ in range(3)] + [mask]


def _sdpa_module(tmp_path, lib: str, symbol: str = "fa_keep", mask: torch.Tensor | None = None,
                 kind: str = "keep", **problem):
    """The SDPA block (B 2, H 4, T 6, D 8) as a whole-graph artifact over ``lib``, loaded with
    its binding run on the CPU: the module, its inputs (``mask``, all-True keep by default)
    and the artifact directory. ``problem`` adds keys to the attention problem."""
    inputs = _sdpa_inputs(torch.ones(6, 6, dtype=torch.bool) if mask is None else mask)
    art = _whole_graph_artifact(tmp_path, _Sdpa(), inputs, lib,
                                {**attn_problem(2, 4, 4, 6, 6, 8, kind, _BHTD, "bhtd"), **problem},
                                _QKVM, symbol)
    fm = load(art)
    fm.bindings["p0"].device_type = "cpu"
    return fm, inputs, art


def test_broadcast_keep_mask(tmp_path, attention_library: str) -> None:
    keep = torch.rand(6, 6, generator=torch.Generator().manual_seed(1)) > 0.4
    keep[:, 0] = True
    fm, inputs, art = _sdpa_module(tmp_path, attention_library, mask=keep)
    out = fm(*inputs)
    assert fm.fallback_counts() == {"p0": 0}
    torch.testing.assert_close(out, _Sdpa()(*inputs), rtol=1e-5, atol=1e-5)
    last = last_args(art)
    assert last.mask == keep.data_ptr()
    assert (last.mask_batch_stride, last.mask_head_stride, last.mask_row_stride) == (0, 0, 6)


def test_sdpa_gives_zeros_where_every_key_is_masked() -> None:
    # What the ABI's NaN for a fully masked row is compared against: torch's SDPA writes 0
    # there (its math path uses a safe softmax), explicit softmax over all -inf gives NaN.
    q, k, v, keep = _sdpa_inputs(torch.ones(6, 6, dtype=torch.bool))
    keep[2] = False
    assert (_Sdpa()(q, k, v, keep)[:, :, 2] == 0).all()
    assert _DropMask()(q, k, v, ~keep)[:, :, 2].isnan().all()


def test_sdpa_form_asks_the_kernel_for_zeros_in_fully_masked_rows(tmp_path,
                                                                  attention_library: str) -> None:
    keep = torch.rand(6, 6, generator=torch.Generator().manual_seed(5)) > 0.4
    keep[:, 0] = True
    keep[2] = False  # query 2 sees no key: SDPA writes 0 there, the hand-written form NaN
    fm, inputs, art = _sdpa_module(tmp_path, attention_library, mask=keep, form="sdpa")
    out = fm(*inputs)
    assert last_args(art).flags == FACT_ATTN_FLAG_EMPTY_ROW_ZERO
    assert (out[:, :, 2] == 0).all() and not out.isnan().any()
    torch.testing.assert_close(out, _Sdpa()(*inputs), rtol=1e-5, atol=1e-5)


def test_additive_mask_per_batch_broadcast_over_heads(tmp_path,
                                                      attention_library: str) -> None:
    add = torch.randn(2, 1, 6, 6, generator=torch.Generator().manual_seed(2))
    add[:, :, :, 4] = float("-inf")
    fm, inputs, art = _sdpa_module(tmp_path, attention_library, "fa_additive", mask=add,
                                   kind="additive")
    torch.testing.assert_close(fm(*inputs), _Sdpa()(*inputs), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}
    last = last_args(art)
    assert (last.mask_batch_stride, last.mask_head_stride, last.mask_row_stride) == (36, 0, 6)
    # No prologue: the kernel adds the mask's values as they are.
    assert (last.mask_affine, last.mask_rsub, last.mask_scale) == (0, 0.0, 0.0)


def test_drop_mask_of_masked_fill_and_a_fully_masked_row(tmp_path,
                                                         attention_library: str) -> None:
    drop = torch.rand(2, 4, 6, 6, generator=torch.Generator().manual_seed(4)) > 0.7
    drop[..., 0] = False
    drop[1, 3, 2] = True  # query 2 of batch 1, head 3 sees no key: NaN in eager and kernel
    inputs = _sdpa_inputs(drop)
    model = _DropMask()
    art = _whole_graph_artifact(tmp_path, model, inputs, attention_library,
                                attn_problem(2, 4, 4, 6, 6, 8, "drop", _BHTD, "bhtd"),
                                {"q": "q", "k": "k", "v": "v", "mask": "drop"}, "fa_drop")
    fm = load(art)
    fm.bindings["p0"].device_type = "cpu"
    out, want = fm(*inputs), model(*inputs)
    assert out.isnan().sum() == want.isnan().sum() == 8 and out[1, 3, 2].isnan().all()
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert fm.fallback_counts() == {"p0": 0}
    assert (last_args(art).mask_batch_stride, last_args(art).mask_head_stride) == (144, 36)


def test_grouped_query_heads_read_the_shared_kv_heads(tmp_path,
                                                      attention_library: str) -> None:
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 6, 5, 8, generator=g)
    k, v = torch.randn(2, 2, 5, 8, generator=g), torch.randn(2, 2, 5, 8, generator=g)
    art = _whole_graph_artifact(tmp_path, _Gqa(), [q, k, v], attention_library,
                                attn_problem(2, 6, 2, 5, 5, 8, "causal", [240, 40, 8], "bhtd"),
                                {"q": "q", "k": "k", "v": "v"}, "fa_causal")
    fm = load(art)
    assert fm.aten_nodes() == [] and "p0" not in fm.disabled_patterns()  # no buffer
    fm.bindings["p0"].device_type = "cpu"
    torch.testing.assert_close(fm(q, k, v), _Gqa()(q, k, v), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}
    last = last_args(art)
    assert (last.heads, last.kv_heads, last.k_head_stride) == (6, 2, 40)


def test_strided_operands_are_read_in_place(tmp_path, attention_library: str) -> None:
    fm, (q, k, v, keep), art = _sdpa_module(tmp_path, attention_library)
    wide = torch.randn(2, 4, 6, 16)
    qs = wide[..., 4:12]  # rows 16 apart, 16-byte aligned: the plan's strides are not needed
    out = fm(qs, k, v, keep)
    assert fm.fallback_counts() == {"p0": 0}
    torch.testing.assert_close(out, _Sdpa()(qs, k, v, keep), rtol=1e-5, atol=1e-5)
    last = last_args(art)
    assert last.q == qs.data_ptr() and last.q_row_stride == 16 and last.q_head_stride == 96


def test_non_contiguous_last_dim_falls_back_with_the_reason(tmp_path,
                                                            attention_library: str) -> None:
    fm, (q, k, v, keep), _ = _sdpa_module(tmp_path, attention_library)
    qt = q.transpose(-1, -2).contiguous().transpose(-1, -2)  # same values, stride(-1) 6
    assert qt.shape == q.shape and qt.stride(-1) == 6
    assert torch.equal(fm(qt, k, v, keep), _Sdpa()(qt, k, v, keep))
    assert fm.fallback_reasons() == {"p0": {
        "q's last dimension has stride 6: the kernel reads head_dim contiguously": 1}}


def test_kernel_refusal_falls_back_with_its_code(tmp_path, attention_library: str) -> None:
    fm, (q, k, v, keep), _ = _sdpa_module(tmp_path, attention_library)
    flat = torch.randn(q.numel() + 1)
    qm = flat[1:].view(q.shape)  # 4 bytes off a 16-byte boundary
    assert torch.equal(fm(qm, k, v, keep), _Sdpa()(qm, k, v, keep))
    (reason,) = fm.fallback_reasons()["p0"]
    assert reason.startswith("can_implement rejected the arguments (code 2: "
                             "FACT_ATTN_ERR_STRIDE")


def test_mask_strides_broadcast_as_torch_does() -> None:
    m = torch.ones(2, 4, 6, 6)
    assert mask_strides(m, 2, 4, 6, 6) == (144, 36, 6)
    assert mask_strides(m[:, :1], 2, 4, 6, 6) == (144, 0, 6)
    assert mask_strides(torch.ones(1, 6), 2, 4, 6, 6) == (0, 0, 0)  # one row for all queries
    assert mask_strides(torch.ones(6), 2, 4, 6, 6) == (0, 0, 0)
    assert mask_strides(torch.ones(4, 6, 6), 2, 4, 6, 6) == (0, 36, 6)
    assert "does not broadcast" in mask_strides(torch.ones(3, 6), 2, 4, 6, 6)
    assert "last dimension must be the 6 keys" in mask_strides(torch.ones(6, 1), 2, 4, 6, 6)
    assert "stride 6" in mask_strides(torch.ones(6, 6).t(), 2, 4, 6, 6)
    assert "5 dimensions" in mask_strides(torch.ones(1, 2, 4, 6, 6), 2, 4, 6, 6)


def test_kernel_error_code_is_raised_with_its_meaning(tmp_path,
                                                      attention_library: str) -> None:
    fm, inputs, _ = _sdpa_module(tmp_path, attention_library, symbol="fa_fail")
    with pytest.raises(RuntimeError, match=r"fa_fail_kernel \(pattern p0\) failed with code 4 "
                                           r"\(FACT_ATTN_ERR_RANGE"):
        fm(*inputs)


def test_inconsistent_attention_patterns_are_artifact_errors(tmp_path,
                                                             attention_library: str) -> None:
    inputs = _sdpa_inputs(torch.ones(6, 6, dtype=torch.bool))
    graph = export(_Sdpa(), inputs)
    node = graph["nodes"][-1]["name"]
    good = attn_problem(2, 4, 4, 6, 6, 8, "keep", _BHTD, "bhtd")
    bad = {"strides.o": (dict(good, strides=dict(good["strides"], o=[192, 48, 4])), _QKVM),
           "needs mask operand": (good, {"q": "q", "k": "k", "v": "v"}),
           "not a multiple": (dict(good, kv_heads=3), _QKVM),
           "has shape": (dict(good, seq_q=5), _QKVM),
           "unknown mask": (dict(good, mask="sliding"), _QKVM),
           "lacks scale": ({k: v for k, v in good.items() if k != "scale"}, _QKVM)}
    for i, (match, (problem, operands)) in enumerate(bad.items()):
        sub = tmp_path / f"case{i}"
        sub.mkdir()
        pat = attn_pattern([node], node, operands, problem, "fa_keep")
        art = attn_artifact(sub, graph, [pat], attention_library)
        with pytest.raises(ArtifactError, match=match):
            load(art)
    types = {"o": {"dtype": "float32", "shape": [2, 6, 32], "strides": [192, 32, 1]}}
    bthd = dict(good, output_layout="bthd", strides=dict(good["strides"], o=[192, 8, 32]))
    check_pattern({"problem": bthd, "operands": _QKVM, "output": "o"}, types)


def test_bmm_form_reads_three_dimensional_operands(tmp_path, attention_library: str) -> None:
    # torch.bmm on [N, T, D]: discovered as one head per batch entry (head stride 0).
    class Bmm(nn.Module):
        def forward(self, q, k, v):
            s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(8)
            return torch.bmm(torch.softmax(s, dim=-1), v)

    model = Bmm()
    x = [torch.randn(4, 8, 8) for _ in range(3)]
    graph = export(model, x)
    (p,) = [p for p in discover_plan(tmp_path, graph)["patterns"] if p["rule"] == "attention"]
    assert (p["problem"]["batch"], p["problem"]["heads"]) == (4, 1)
    art = attn_artifact(tmp_path, graph, [attn_pattern(p["nodes"], p["output"], p["operands"],
                                                       p["problem"], "fa_none")],
                        attention_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(*x), model(*x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}
    last = last_args(art)
    assert (last.q_batch_stride, last.q_head_stride, last.q_row_stride) == (64, 0, 8)


# ------------------------------------------------------------------ the mask prologue

class _PaddingMask(nn.Module):
    """Hugging Face's key-padding mask, (1.0 - m) * finfo.min added to the scores; m is the
    [B, 1, 1, T] 0/1 mask (1 = a real key)."""

    def forward(self, q, k, v, m):
        additive = (1.0 - m) * torch.finfo(torch.float32).min
        att = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + additive
        return F.softmax(att, dim=-1) @ v


def _padding_inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(6)
    m = torch.ones(2, 1, 1, 6)
    m[0, ..., 4:] = 0  # sequence 0 has 4 keys, sequence 1 all 6
    return [torch.randn(2, 4, 6, 8, generator=g) for _ in range(3)] + [m]


def test_mask_prologue_fills_the_args_and_the_kernel_reads_the_0_1_mask(
        tmp_path, attention_library: str) -> None:
    inputs = _padding_inputs()
    finfo_min = torch.finfo(torch.float32).min
    problem = {**attn_problem(2, 4, 4, 6, 6, 8, "additive", _BHTD, "bhtd",
                              {"mask": [6, 0, 0]}), "mask_rsub": 1.0, "mask_scale": finfo_min}
    art = _whole_graph_artifact(tmp_path, _PaddingMask(), inputs, attention_library, problem,
                                {"q": "q", "k": "k", "v": "v", "mask": "m"}, "fa_additive")
    fm = load(art)
    fm.bindings["p0"].device_type = "cpu"
    a = fm.bindings["p0"].args(inputs, torch.empty(2, 4, 6, 8))
    assert (a.mask_affine, a.mask_rsub, a.mask_scale) == (1, 1.0, finfo_min)
    assert a.mask == inputs[3].data_ptr()
    assert (a.mask_batch_stride, a.mask_head_stride, a.mask_row_stride) == (6, 0, 0)
    out = fm(*inputs)
    assert fm.fallback_counts() == {"p0": 0}
    torch.testing.assert_close(out, _PaddingMask()(*inputs), rtol=1e-5, atol=1e-5)
    last = last_args(art)
    assert (last.mask_affine, last.mask_rsub, last.mask_scale) == (1, 1.0, finfo_min)
    assert summary(problem).startswith("mask additive (1.0 - M) * -3.4028234663852886e+38, 4 heads")


def test_mask_prologue_of_a_bad_problem_is_an_artifact_error() -> None:
    pattern = {"problem": {**attn_problem(2, 4, 4, 6, 6, 8, "keep", _BHTD, "bhtd"),
                           "mask_rsub": 1.0, "mask_scale": -1.0},
               "operands": {"q": "q", "k": "k", "v": "v", "mask": "m"}, "output": "o"}
    with pytest.raises(ValueError, match="mask_rsub and mask_scale must be two finite numbers"):
        check_pattern(pattern, {})
    pattern["problem"].update(mask="additive", mask_scale=float("inf"))
    with pytest.raises(ValueError, match="mask_rsub and mask_scale"):
        check_pattern(pattern, {})
    del pattern["problem"]["mask_scale"]
    with pytest.raises(ValueError, match="mask_rsub and mask_scale"):
        check_pattern(pattern, {})


def test_discovered_padding_mask_runs_with_its_prologue(tmp_path, attention_library: str) -> None:
    # The engine's plan of the padding-mask spelling takes rsub and mul into the pattern: the
    # kernel reads m and computes (1.0 - m) * finfo.min itself.
    model, inputs = _PaddingMask(), _padding_inputs()
    graph = export(model, inputs)
    (p,) = [p for p in discover_plan(tmp_path, graph)["patterns"] if p["rule"] == "attention"]
    assert p["operands"]["mask"] == "m"
    assert (p["problem"]["mask_rsub"], p["problem"]["mask_scale"]) == \
        (1.0, torch.finfo(torch.float32).min)
    ops = {n["name"]: n["op"] for n in graph["nodes"]}
    assert {ops[n] for n in p["nodes"]} >= {"aten.rsub.Scalar", "aten.mul.Tensor"}
    art = attn_artifact(tmp_path, graph, [attn_pattern(p["nodes"], p["output"], p["operands"],
                                                       p["problem"], "fa_additive")],
                        attention_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(*inputs), model(*inputs), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}
    assert last_args(art).mask_affine == 1
