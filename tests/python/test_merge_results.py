"""bench/merge_results.py --replace: rows of newer runs take the place of the committed rows
of the same problem, policy and model dtype, each naming its own commit."""

from __future__ import annotations

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("merge_results", ROOT / "bench" / "merge_results.py")
merge_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(merge_results)


def _doc(commit: str, rows: list[dict], gpu: str = "NVIDIA H200") -> dict:
    return {"command": f"run at {commit}", "date": "2026-12-01T00:00:00Z",
            "machine": {"gpu": gpu, "driver": "580", "fact_commit": commit}, "rows": rows}


def _row(problem: str, policy: str, ms: float, dtype: str | None = None) -> dict:
    r = {"problem": problem, "policy": policy, "fact_ms": ms, "verified": True,
         "baselines_ms": {"eager": 2 * ms}}
    if dtype:
        r["model_dtype"] = dtype
    return r


def test_replace_keeps_other_rows_and_names_each_rows_commit(tmp_path: pathlib.Path) -> None:
    base = tmp_path / "blocks.json"
    base.write_text(json.dumps(_doc("aaa", [_row("mini", "tf32", 3.5), _row("mini", "bf16", 2.0),
                                            _row("mini", "bf16", 1.9, "bfloat16")])))
    part = tmp_path / "part.json"
    part.write_text(json.dumps(_doc("bbb", [_row("mini", "tf32", 3.2), _row("llama", "tf32", 40.0)])))
    assert merge_results.main(["--replace", str(base), str(part), "--out", str(base)]) == 0
    doc = json.loads(base.read_text())
    got = [(r["problem"], r["policy"], r.get("model_dtype"), r["fact_ms"], r["fact_commit"]) for r in doc["rows"]]
    assert got == [("mini", "tf32", None, 3.2, "bbb"), ("mini", "bf16", None, 2.0, "aaa"),
                   ("mini", "bf16", "bfloat16", 1.9, "aaa"), ("llama", "tf32", None, 40.0, "bbb")]
    assert doc["machine"]["fact_commit"] == "bbb"
    assert doc["command"] == "run at aaa && run at bbb"
    assert (tmp_path / "blocks.md").exists()


def test_replace_refuses_another_gpu(tmp_path: pathlib.Path) -> None:
    base = tmp_path / "blocks.json"
    base.write_text(json.dumps(_doc("aaa", [_row("mini", "tf32", 3.5)])))
    part = tmp_path / "part.json"
    part.write_text(json.dumps(_doc("bbb", [_row("mini", "tf32", 3.2)], gpu="NVIDIA H100")))
    before = base.read_text()
    assert merge_results.main(["--replace", str(base), str(part), "--out", str(base)]) == 2
    assert base.read_text() == before
