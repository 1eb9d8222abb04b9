"""A wide linear then Swish, scale: y = swish(x @ W.T + b) * 2.0.

``nn.Linear(32768, 32768)`` (a 4 GiB float32 weight) on x (128, 32768), float32: a short,
wide GEMM whose output (16 MiB) the ATen tail reads and writes twice more; Swish is written
out (x * sigmoid(x)) and FACT fuses the tail into the GEMM's epilogue.
"""

import torch
import torch.nn as nn

BATCH, IN_FEATURES, OUT_FEATURES = 128, 32768, 32768


class Model(nn.Module):
    """swish(linear(x)) * scaling_factor."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x * torch.sigmoid(x)  # Swish
        return x * self.scaling_factor


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (128, 32768) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: features and scaling factor."""
    return [IN_FEATURES, OUT_FEATURES, 2.0]
