"""minGPT's MLP block: Linear(768, 3072), NewGELU written out by hand, Linear(3072, 768).

x is (64, 1024, 768) float32 (65536 tokens, GPT-2 small's width). NewGELU is minGPT's
tanh approximation, 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), spelled as
elementwise ops: FACT fuses it into the first GEMM's epilogue; the second GEMM has no tail.
"""

import math

import torch
import torch.nn as nn

BATCH, SEQ, N_EMBD = 64, 1024, 768


class NewGELU(nn.Module):
    """The GELU of Google BERT / OpenAI GPT, as minGPT writes it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class Model(nn.Module):
    """c_proj(NewGELU(c_fc(x))): minGPT's MLP without dropout."""

    def __init__(self, n_embd: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.act = NewGELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.act(self.c_fc(x)))


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (64, 1024, 768) on CPU, standard normal (activations)."""
    return [torch.randn(BATCH, SEQ, N_EMBD)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: the embedding width."""
    return [N_EMBD]
