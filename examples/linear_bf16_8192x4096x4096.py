"""A bfloat16 linear layer: y = x @ W.T + b, 8192 tokens, 4096 -> 4096 features.

``nn.Linear(4096, 4096)`` with bias, cast to bfloat16, on x of shape (8192, 4096):
one ``aten.linear`` of 2 * 8192 * 4096 * 4096 ≈ 275 GFLOP with a bias epilogue.
"""

import torch
import torch.nn as nn

TOKENS, IN_FEATURES, OUT_FEATURES = 8192, 4096, 4096


class Model(nn.Module):
    """y[T, out] = x[T, in] @ weight[out, in].T + bias[out], all bfloat16."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, out_features, bias=True).to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random bfloat16 x of shape (8192, 4096) on CPU."""
    return [torch.randn(TOKENS, IN_FEATURES, dtype=torch.bfloat16)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: in and out features."""
    return [IN_FEATURES, OUT_FEATURES]
