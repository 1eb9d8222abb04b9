"""3-D tensor times matrix (KernelBench level 1 #10): A (16, 1024, 2048) @ B (2048, 768).

A's batch folds into M: one (16384, 2048) @ (2048, 768) GEMM.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

N = 16
M = 1024
K = 2048
L = 768


class Model(nn.Module):
    """C = matmul(A, B) with A (N, M, K), B (K, L) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (N, M, K), B (K, L)."""
    return [torch.rand(N, M, K), torch.rand(K, L)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
