"""Linear then divide, GELU: y = gelu((x @ W.T + b) / 10.0) (erf form).

``nn.Linear(8192, 8192)`` on x (1024, 8192), float32, followed by an elementwise tail that
FACT fuses into the GEMM's epilogue.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """gelu(linear(x) / divisor), exact (erf) GELU."""

    def __init__(self, in_features: int, out_features: int, divisor: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x / self.divisor
        return F.gelu(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: features and divisor."""
    return [IN_FEATURES, OUT_FEATURES, 10.0]
