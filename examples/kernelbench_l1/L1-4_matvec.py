"""Matrix-vector multiplication (KernelBench level 1 #4): C = A @ B, A (2048, 1048576), B (1048576, 1).

Memory-bound: A is 8 GiB of float32, read once.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 256 * 8
K = 131072 * 8


class Model(nn.Module):
    """C = matmul(A, B) with A (M, K), B (K, 1) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (M, K), B (K, 1)."""
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
