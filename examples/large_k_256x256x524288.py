"""Matrix multiplication with a very long reduction: (256, 524288) @ (524288, 256), float32.

A small output (256 x 256) over K = 524288: a GEMM whose parallelism must come from
splitting K. 2 * 256 * 256 * 524288 ≈ 68.7 GFLOP; each operand is 512 MiB.
"""

import torch
import torch.nn as nn

M, N, K = 256, 256, 524288


class Model(nn.Module):
    """C[M, N] = A[M, K] @ B[K, N] via ``torch.matmul`` (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 A (256, 524288) and B (524288, 256) on CPU."""
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
