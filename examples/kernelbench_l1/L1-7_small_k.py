"""Matrix multiplication with a small K (KernelBench level 1 #7): A (32768, 64) @ B (64, 32768).

The 4 GiB float32 output makes it memory-bound at every precision.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 16384 * 2
N = 16384 * 2
K = 32 * 2


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
