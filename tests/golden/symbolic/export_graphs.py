"""Writes the symbolic golden graphs of this folder (run from the repository root:
`.venv/bin/python tests/golden/symbolic/export_graphs.py`); each <name>.graph.json is the
input of tests/discover/symbolic_plan_test.cpp, which compares its plan with <name>.plan."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
from fact.export import export, write_graph  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(torch.nn.Module):
    """x [B, 4, 64] -> linear 64->32 -> relu -> view [4B, 32] -> linear 32->16 -> [B, 4, 16]:
    both GEMMs have M = 4*B; the relu is the first one's tail."""

    def __init__(self):
        super().__init__()
        self.fc, self.fc2 = torch.nn.Linear(64, 32), torch.nn.Linear(32, 16)

    def forward(self, x):
        b, t, _ = x.shape
        return self.fc2(self.fc(x).relu().view(b * t, 32)).view(b, t, 16)


class KSymbolic(torch.nn.Module):
    """x [64, S] @ w [S, 64]: K = S, and A's leading dimension lda = S too: the GEMM holds
    for every S (alignment is checked per call by the kernel's can_implement)."""

    def forward(self, x, w):
        return x @ w


class TooLargeAtMax(torch.nn.Module):
    """x [B, 2^20, 8] -> linear 8->8: M = 1048576*B exceeds the 32-bit sizes GEMMs take at
    B = 4096 (max), though not at the hint (B = 2): the GEMM holds not for every size, so
    it stays ATen with the rule's reason at that size."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


def main():
    torch.manual_seed(0)
    b = torch.export.Dim("B", min=2, max=4096)
    write_graph(export(Mlp(), [torch.randn(8, 4, 64)], dynamic_shapes=({0: b},)),
                os.path.join(HERE, "mlp_batch.graph.json"))
    write_graph(export(Mlp(), [torch.randn(8, 4, 64)], dynamic_shapes=({0: b},),
                       buckets={"B": [16, 256, 1024]}),
                os.path.join(HERE, "mlp_batch_named_buckets.graph.json"))
    s = torch.export.Dim("S", min=2, max=1024)
    write_graph(export(KSymbolic(), [torch.randn(64, 8), torch.randn(8, 64)],
                       dynamic_shapes=({1: s}, {0: s})),
                os.path.join(HERE, "k_symbolic.graph.json"))
    write_graph(export(TooLargeAtMax(), [torch.randn(2, 1 << 20, 8)], dynamic_shapes=({0: b},)),
                os.path.join(HERE, "too_large_at_max.graph.json"))


if __name__ == "__main__":
    main()
