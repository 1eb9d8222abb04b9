"""Matrix multiplication with irregular shapes (KernelBench level 1 #8): A (8205, 2949) @ B (2949, 5921).

No leading dimension is a multiple of 16 bytes, so TMA cannot read or write the operands as given.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 8205
K = 2949
N = 5921


class Model(nn.Module):
    """C = matmul(A, B) with A (M, K), B (K, N) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (M, K), B (K, N)."""
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
