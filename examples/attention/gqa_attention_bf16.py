"""A bfloat16 Llama attention layer: grouped-query causal attention, 32 query heads share 8 K/V heads.

The model of ``gqa_attention.py`` (HF Llama's layer without rotary embeddings: q/k/v/o
projections without bias, ``repeat_interleave(4, dim=1)`` of K and V, SDPA causal, the head
merge and o_proj) cast to bfloat16, on bfloat16 x of shape (4, 2048, 4096); head dim 128.
bf16 inputs run in their own dtype under every policy, so FACT's attention kernels here
are the bf16 ones, the sm90 (WGMMA + TMA) kernel among them; the attention alone is
bench/attention_check.py's ``hf_llama_causal_attention`` (docs/perf-notes.md v10).
"""

import importlib.util
import os

import torch

_SPEC = importlib.util.spec_from_file_location(
    "gqa_attention_fp32", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gqa_attention.py"))
_FP32 = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_FP32)

batch_size, seq_len, hidden = _FP32.batch_size, _FP32.seq_len, _FP32.hidden
n_head, n_kv_head = _FP32.n_head, _FP32.n_kv_head


class Model(_FP32.Model):
    """gqa_attention.py's o_proj(SDPA(q, repeat(k), repeat(v), is_causal=True)), all bfloat16."""

    def __init__(self, hidden: int, n_head: int, n_kv_head: int) -> None:
        super().__init__(hidden, n_head, n_kv_head)
        self.to(torch.bfloat16)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random bfloat16 x (batch_size, seq_len, hidden) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, hidden, dtype=torch.bfloat16)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: width, query heads, key/value heads."""
    return [hidden, n_head, n_kv_head]
