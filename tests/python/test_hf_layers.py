"""One layer each of Llama, Mistral, Qwen2, GPT-2, BERT, ViT and T5 from ``transformers``
(tiny configs, nothing downloaded), with eager and sdpa attention, called as the models are
(the mask built in forward), exported with FACT's exporter and discovered by the real engine:
attention is matched in every run, causal proven for the decoders (with Mistral's sliding
window), no mask for the bidirectional encoders (docs/03-rules.md, "The attention rule"),
and the rotary embedding of q and of k matched as two rope patterns in the decoders that
have one (docs/03-rules.md, "The rope rule")."""

from __future__ import annotations

import json
import subprocess
import warnings

import pytest
import torch

from fact.export import export, write_graph

tf = pytest.importorskip("transformers")

T = 8  # tokens; ViT: a 32x32 image in 8x8 patches (16 + the class token)
WINDOW = 4  # Mistral's sliding window, shorter than T so that it shows


def _config(name: str, impl: str):
    small = dict(num_hidden_layers=1, attn_implementation=impl)
    decoder = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=64, **small)
    if name == "llama":
        return tf.LlamaConfig(**decoder), tf.LlamaModel
    if name == "mistral":
        return tf.MistralConfig(sliding_window=WINDOW, **decoder), tf.MistralModel
    if name == "qwen2":
        return tf.Qwen2Config(**decoder), tf.Qwen2Model
    if name == "gpt2":
        return tf.GPT2Config(vocab_size=128, n_embd=64, n_layer=1, n_head=4, n_positions=64,
                             bos_token_id=0, eos_token_id=0, attn_implementation=impl), tf.GPT2Model
    if name == "bert":
        return tf.BertConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                             num_attention_heads=4, max_position_embeddings=64, **small), tf.BertModel
    if name == "vit":
        return tf.ViTConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                            image_size=32, patch_size=8, **small), tf.ViTModel
    return tf.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=1, num_heads=4,
                       attn_implementation=impl), tf.T5EncoderModel


class Hidden(torch.nn.Module):
    """The model's last hidden state (no cache): what one layer computes from its input."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(self.model, tf.ViTModel):
            return self.model(pixel_values=x).last_hidden_state
        kw = {} if isinstance(self.model, (tf.BertModel, tf.T5EncoderModel)) else {"use_cache": False}
        return self.model(input_ids=x, **kw).last_hidden_state


def layer(name: str, impl: str) -> tuple[Hidden, torch.Tensor]:
    """One layer of model ``name`` with attention ``impl`` in eval mode (seed 0) and an input
    for it (token ids, or a ViT image); bench/hf_layer_plans.py prints its plan."""
    torch.manual_seed(0)
    config, cls = _config(name, impl)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Hidden(cls(config).eval())
    x = torch.randn(2, 3, 32, 32) if name == "vit" else torch.randint(0, 128, (2, T))
    return model, x


# model -> (what its attention's mask must be proven, the window)
EXPECTED = {"llama": ("causal", None), "mistral": ("causal", WINDOW), "qwen2": ("causal", None),
            "gpt2": ("causal", None), "bert": ("none", None), "vit": ("none", None),
            "t5": ("additive", None)}  # T5: its relative position bias, the all-true mask gone
ROPE = {"llama", "mistral", "qwen2"}  # the decoders with rotary embeddings


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_layer_attention_is_matched_and_its_mask_proven(name, impl, factc, tmp_path) -> None:
    model, x = layer(name, impl)
    with torch.no_grad():
        write_graph(export(model, [x]), tmp_path / "graph.json")
    subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "-o", str(tmp_path / "plan.json")],
                   check=True, capture_output=True)
    plan = json.loads((tmp_path / "plan.json").read_text())
    attention = [p for p in plan["patterns"] if p["rule"] == "attention"]
    reasons = [r["reason"] for r in plan["rejected"] if r["rule"] == "attention"]
    assert len(attention) == 1, reasons
    problem = attention[0]["problem"]
    mask, window = EXPECTED[name]
    assert (problem["mask"], problem.get("window")) == (mask, window), problem
    assert [p for p in plan["patterns"] if p["rule"] == "gemm"], "every linear is a GEMM"
    ropes = [p for p in plan["patterns"] if p["rule"] == "rope"]
    if name in ROPE:  # q and k rotated, each one pattern the attention reads
        assert len(ropes) == 2, [r for r in plan["rejected"] if r["rule"] == "rope"]
        assert {p["output"] for p in ropes} <= set(attention[0]["operands"].values())
        assert sorted(p["problem"]["dims"][1] for p in ropes) == [2, 4]  # 2 kv heads, 4 q heads
        assert {p["problem"]["form"] for p in ropes} == {"half"}
    else:
        assert ropes == []


SYMBOL = {"causal": "fa_causal", "none": "fa_none", "additive": "fa_additive"}


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("name", ["llama", "mistral", "gpt2", "bert"])
def test_layer_runs_its_attention_on_the_stand_in_kernel(name, impl, factc, tmp_path,
                                                         attention_library: str) -> None:
    """With head dim 8 (the stand-in kernel's), the plan's attention pattern — the mask's
    builders and the nodes the canonical form dropped among its nodes — runs through the
    runtime on the exported graph and gives the model's output; Mistral's sliding window
    (4 of 8 tokens) reaches the kernel as the args' window."""
    from attention_cases import attn_artifact, attn_pattern, last_args
    from fact.runtime import load

    torch.manual_seed(0)
    config, cls = _config(name, impl)
    for key in ("hidden_size", "n_embd"):
        if hasattr(config, key):
            setattr(config, key, 32)  # 4 heads of 8
    config.head_dim = 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Hidden(cls(config).eval())
    x = torch.randint(0, 128, (2, T))
    with torch.no_grad():
        graph = export(model, [x])
    write_graph(graph, tmp_path / "graph.json")
    subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "-o", str(tmp_path / "plan.json")],
                   check=True, capture_output=True)
    (attn,) = [p for p in json.loads((tmp_path / "plan.json").read_text())["patterns"]
               if p["rule"] == "attention"]
    pattern = attn_pattern(attn["nodes"], attn["output"], attn["operands"], attn["problem"],
                           SYMBOL[attn["problem"]["mask"]])
    art = attn_artifact(tmp_path, graph, [pattern], attention_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"  # host memory is the stand-in's device
    with torch.no_grad():
        out, want = fm(x), model(x)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0} and fm.disabled_patterns() == {}
    assert last_args(art).window == (WINDOW if name == "mistral" else 0)
    assert not set(fm.aten_nodes()) & set(attn["nodes"])  # the dropped nodes inside go with it
    ops = {n["name"]: n["op"] for n in graph["nodes"]}
    assert not {ops[n] for n in fm.aten_nodes()} & {"aten.softmax.int", "aten.scaled_dot_product_attention.default"}
