"""A Llama-3-8B decoder layer, written by hand (the FACT paper's block definition).

x is (16, 2048, 4096) float32: batch 16, sequence 2048, model width 4096; 32 query heads
and 8 key/value heads of head dim 128 (grouped-query attention, the K/V heads repeated by
repeat_interleave as LLaMA's reference code does), no mask. RMSNorm (eps 1e-5) is written
out as LLaMA and Hugging Face write it: x * rsqrt(mean(x^2) + eps) * weight, computed in
float32. Rotary position embeddings (half-split, rotate_half = cat(-x2, x1), theta 500000)
use cos/sin tables built once at construction for the sequence length. The MLP is SwiGLU:
down(silu(gate(x)) * up(x)) with hidden width 9728 (14336 after the paper's 2/3 rounding:
int(2 * 14336 / 3) = 9557, rounded up to a multiple of 256). Residual adds after attention
and after the MLP.

``small_init_inputs()`` / ``small_inputs()`` give the same layer at a size CI can export and
plan in seconds.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
seq_len = 2048
dim = 4096
n_head = 32
n_kv_head = 8
ffn_hidden = 14336
norm_eps = 1e-5
rope_theta = 500000.0


def swiglu_width(hidden: int, multiple_of: int = 256) -> int:
    """int(2 * hidden / 3) rounded up to a multiple of ``multiple_of`` (LLaMA's rule)."""
    h = int(2 * hidden / 3)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2, last dim) + eps) * weight, in float32, cast back (Zhang and Sennrich,
    arXiv:1910.07467; LLaMA's spelling)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.type_as(x)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    """h = x + o(attn(rope(q(n1(x))), rope(k(n1(x))), v(n1(x)))); out = h + down(silu(gate(n2(h))) * up(n2(h)))."""

    def __init__(self, dim: int, n_head: int, n_kv_head: int, ffn_hidden: int, norm_eps: float,
                 rope_theta: float, seq_len: int) -> None:
        super().__init__()
        assert dim % n_head == 0 and n_head % n_kv_head == 0
        self.n_head, self.n_kv_head, self.head_dim = n_head, n_kv_head, dim // n_head
        self.attention_norm = RMSNorm(dim, norm_eps)
        self.wq = nn.Linear(dim, n_head * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_head * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_head * self.head_dim, bias=False)
        self.wo = nn.Linear(n_head * self.head_dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim, norm_eps)
        hidden = swiglu_width(ffn_hidden)
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(seq_len).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # (T, head_dim)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[:, :, :T], self.sin[:, :, :T]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.n_head // self.n_kv_head
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        out = F.softmax(scores.float(), dim=-1).type_as(q) @ v
        return self.wo(out.transpose(1, 2).contiguous().view(B, T, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x))
        n = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (batch_size, seq_len, dim) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``."""
    return [dim, n_head, n_kv_head, ffn_hidden, norm_eps, rope_theta, seq_len]


def small_init_inputs() -> list:
    """The same layer at CI size: width 128, 4 query / 2 K/V heads of 32, FFN 384 -> 256."""
    return [128, 4, 2, 384, norm_eps, rope_theta, 16]


def small_inputs() -> list[torch.Tensor]:
    """x (2, 16, 128) for ``small_init_inputs()``'s layer."""
    return [torch.randn(2, 16, 128)]
