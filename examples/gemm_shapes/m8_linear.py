"""A decode-step projection: nn.Linear(4096, 4096) on 8 tokens (M = 8, N = 4096, K = 4096).

M as small as 8: the 64 MiB weight read dominates (memory-bound), and a tensor-core tile of
64 or more rows computes mostly padding. Whichever of FACT's kernels and the vendor's reads
the weight fastest wins.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

TOKENS = 8
FEATURES = 4096


class Model(nn.Module):
    """y = x @ W^T + b with x (8, 4096), W (4096, 4096), b (4096) (float32)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(FEATURES, FEATURES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 input on CPU: x (8, 4096)."""
    return [torch.rand(TOKENS, FEATURES)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
