"""Matrix multiplication with both operands transposed (KernelBench level 1 #18): C = A.T @ B.T, A (8192, 2048), B (4096, 8192).

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


class Model(nn.Module):
    """C = matmul(A.T, B.T) with A (K, M), B (N, K) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B.T)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (K, M), B (N, K)."""
    return [torch.rand(K, M), torch.rand(N, K)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
