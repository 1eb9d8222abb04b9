"""Linear then scale, hardtanh, GELU: y = gelu(hardtanh((x @ W.T + b) * 0.5, -2, 2)).

``nn.Linear(8192, 8192)`` on x (1024, 8192), float32, followed by an elementwise tail that
FACT fuses into the GEMM's epilogue (GELU in its erf form).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """gelu(hardtanh(linear(x) * scaling_factor, min_val, max_val))."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float,
                 hardtanh_min: float, hardtanh_max: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.hardtanh = nn.Hardtanh(min_val=hardtanh_min, max_val=hardtanh_max)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x * self.scaling_factor
        x = self.hardtanh(x)
        return F.gelu(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: features, scale and hardtanh bounds."""
    return [IN_FEATURES, OUT_FEATURES, 0.5, -2.0, 2.0]
