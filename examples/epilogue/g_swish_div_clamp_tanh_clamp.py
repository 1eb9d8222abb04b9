"""Linear then Swish, divide, clamp, tanh, clamp.

y = clamp(tanh(clamp(s / 2.0, -1, 1)), -1, 1) with s = h * sigmoid(h), h = x @ W.T + b.
``nn.Linear(8192, 8192)`` on x (1024, 8192), float32; Swish is written out (x * sigmoid(x)),
and FACT fuses the whole tail into the GEMM's epilogue.
"""

import torch
import torch.nn as nn

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """clamp(tanh(clamp(swish(linear(x)) / 2, -1, 1)), -1, 1)."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x * torch.sigmoid(x)  # Swish
        x = x / 2.0
        x = torch.clamp(x, min=-1.0, max=1.0)
        x = torch.tanh(x)
        return torch.clamp(x, min=-1.0, max=1.0)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: in and out features."""
    return [IN_FEATURES, OUT_FEATURES]
