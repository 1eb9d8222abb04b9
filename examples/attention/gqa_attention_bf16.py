"""A bfloat16 Llama attention layer: grouped-query causal attention, 32 query heads share 8 K/V heads.

The model of ``gqa_attention.py`` (HF Llama's layer without rotary embeddings: q/k/v/o
projections without bias, ``repeat_interleave(4, dim=1)`` of K and V, SDPA causal, the head
merge and o_proj) cast to bfloat16, on bfloat16 x of shape (4, 2048, 4096); head dim 128.
bf16 inputs run in their own dtype under every policy, so FACT's attention kernels here
are the bf16 ones, the sm90 (WGMMA + TMA) kernel among them; the attention alone is
bench/attention_check.py's ``hf_llama_causal_attention`` (docs/perf-notes.md v10).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 2048
hidden = 4096
n_head = 32
n_kv_head = 8


class Model(nn.Module):
    """o_proj(SDPA(q, repeat(k), repeat(v), is_causal=True)) with grouped K/V heads, all bfloat16."""

    def __init__(self, hidden: int, n_head: int, n_kv_head: int) -> None:
        super().__init__()
        assert hidden % n_head == 0 and n_head % n_kv_head == 0
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.head_dim = hidden // n_head
        self.q_proj = nn.Linear(hidden, n_head * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, n_kv_head * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, n_kv_head * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_head * self.head_dim, hidden, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.size()
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        n_rep = self.n_head // self.n_kv_head
        k = k.repeat_interleave(n_rep, dim=1)  # (B, n_head, T, head_dim)
        v = v.repeat_interleave(n_rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_head * self.head_dim)
        return self.o_proj(y)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random bfloat16 x (batch_size, seq_len, hidden) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, hidden, dtype=torch.bfloat16)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: width, query heads, key/value heads."""
    return [hidden, n_head, n_kv_head]
