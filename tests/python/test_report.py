"""Bench result files: the row table and the speedup rule (no claim when unverified)."""

from __future__ import annotations

import json

from fact.report import bench_document, render_markdown, render_text, speedup, write_bench

ROW = {"problem": "square_4096", "policy": "tf32", "fact_ms": 0.3, "fact_spread_ms": [0.29, 0.31],
       "baselines_ms": {"eager_fp32": 2.7, "eager": 0.36}, "max_rel_err": 2.1e-4, "eager_max_rel_err": 3.0e-4,
       "verified": True, "compile_tune_s": 41.0, "kernels": ["cutlass3x_sm90a_tf32_tn"]}
MACHINE = {"gpu": "NVIDIA H200", "driver": "580.1", "torch": "2.11.0+cu130", "cuda": "13.0",
           "cutlass": "4.2.0", "fact_commit": "abc1234"}


def test_speedup_only_for_verified_rows() -> None:
    assert speedup(ROW) == 0.36 / 0.3
    assert speedup(ROW, "eager_fp32") == 2.7 / 0.3
    assert speedup(dict(ROW, verified=False)) is None


def test_markdown_and_json(tmp_path) -> None:
    doc = bench_document("fact optimize examples/square_4096.py", [ROW,
                         dict(ROW, problem="bad", verified=False)], MACHINE)
    assert doc["date"].endswith("Z") and doc["machine"] == MACHINE
    path = tmp_path / "r.json"
    write_bench(str(path), doc)
    assert json.loads(path.read_text())["rows"][0] == ROW
    md = (tmp_path / "r.md").read_text()
    assert md == render_markdown(doc, source="r.json")
    assert ("| square_4096 | tf32 | 2.700 | 0.360 | — | 0.300 | 1.20x | 2.1e-04 | 3.0e-04 | 41.0 | "
            "cutlass3x_sm90a_tf32_tn | module (fact optimize) | NVIDIA H200 | 2.11.0+cu130 / 13.0 / 4.2.0 |") in md
    assert "| bad | tf32 | 2.700 | 0.360 | — | 0.300 (not verified) | — |" in md
    text = render_text([ROW])
    assert text.splitlines()[0].startswith("problem")
    assert "1.20x" in text


def test_fact_commit_variable_wins_over_git(monkeypatch) -> None:
    from fact.report import git_commit
    monkeypatch.setenv("FACT_COMMIT", "abc1234")
    assert git_commit() == "abc1234"
    monkeypatch.delenv("FACT_COMMIT")
    assert git_commit() != "abc1234"


def test_inductor_columns_and_drawn_input_note() -> None:
    fused = dict(ROW, problem="a_sub_mul_relu", fact_ms=0.25,
                 baselines_ms={"eager_fp32": 2.7, "eager": 0.36, "inductor": 0.3},
                 verified_on=["randn x10"])
    plain = dict(ROW, verified_on=["own inputs"])
    doc = bench_document("python bench/suite.py epilogue", [fused, plain], MACHINE)
    md = render_markdown(doc)
    header = next(line for line in md.splitlines() if line.startswith("| problem"))
    assert ("| cuBLAS ms | torch.compile ms | FACT ms | speedup (vs eager, else cuBLAS) | "
            "speedup vs torch.compile | max rel err |") in header
    assert "| a_sub_mul_relu | tf32 | 2.700 | 0.360 | — | 0.300 | 0.250 | 1.44x | 1.20x |" in md
    # A row without a torch.compile time in the same table: dashes, no speedup claimed.
    assert "| square_4096 | tf32 | 2.700 | 0.360 | — | — | 0.300 | 1.20x | — |" in md
    assert "Verified on drawn inputs" in md and "a_sub_mul_relu tf32 (randn x10)" in md
    assert "square_4096 tf32 (" not in md
    unverified = dict(fused, verified=False)
    assert "| 0.250 (not verified) | — | — |" in render_markdown(
        bench_document("c", [unverified], MACHINE))
    text = render_text([fused])
    assert "torch.compile ms" in text.splitlines()[0] and "1.20x" in text
    # Documents without torch.compile keep the old columns.
    assert "torch.compile" not in render_markdown(bench_document("c", [ROW], MACHINE))


def test_max_autotune_baseline_is_shown_and_the_faster_mode_is_the_bar() -> None:
    row = {"problem": "blk", "policy": "bf16", "fact_ms": 2.0, "verified": True,
           "baselines_ms": {"eager_fp32": 9.0, "eager": 6.0, "inductor": 3.0,
                            "inductor_max_autotune": 2.5},
           "baseline_compile_s": {"inductor": 41.2, "inductor_max_autotune": 312.0},
           "compile_tune_s": 60.0, "kernels": ["k"]}
    text = render_markdown(bench_document("cmd", [row], {"gpu": "NVIDIA H200"}))
    assert "| 3.000 / 2.500 |" in text
    assert "| 1.25x |" in text  # 2.5 / 2.0, not 3.0 / 2.0
    assert "inductor_max_autotune 312 s" in text and "max-autotune" in text


def test_a_rows_own_commit_and_its_cuda_graph_timing_are_shown() -> None:
    """A merged file's row measured at another commit names it in "measured at"; a row that
    timed CUDA-graph replay against plain calls lists both, marking a kept replay."""
    plain = dict(ROW, fact_commit="1234abc",
                 cuda_graph={"replay_ms": 2.325, "plain_ms": 2.144, "kept": False})
    replay = dict(ROW, problem="tiny", model_dtype="bfloat16",
                  cuda_graph={"replay_ms": 0.5, "plain_ms": 0.75, "kept": True})
    md = render_markdown(bench_document("c", [plain, replay], MACHINE))
    assert "| module (fact optimize) at 1234abc |" in md
    assert "| module (fact optimize) |" in md  # the other row: the file's commit
    assert ("CUDA-graph replay / plain calls, ms (the module timed both ways, alternating; the faster "
            "is kept, plain unless marked): square_4096 tf32: 2.325 / 2.144; "
            "tiny (bfloat16 model) tf32: 0.500 / 0.750 (replay kept).") in md
    assert "CUDA-graph" not in render_markdown(bench_document("c", [ROW], MACHINE))
