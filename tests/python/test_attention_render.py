"""bench/attention_check.py's kernel-level table, rendered from a results file."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))

import attention_check  # noqa: E402


def _row(problem, policy, fact, sdpa, commit=None):
    r = {"problem": problem, "policy": policy, "fact_ms": fact, "baselines_ms": {"sdpa": sdpa, "eager": 9.0},
         "sdpa_gqa_ms": sdpa, "max_rel_err": 4.5e-3, "sdpa_max_rel_err": 2.3e-3, "verified": True,
         "kernels": [f"fact_attn_sm90_{policy}_x"], "fact_sm80_ms": None}
    if commit:
        r["fact_commit"] = commit
    return r


def test_rows_name_their_commit_and_ratio_and_unverified_rows_are_left_out():
    doc = {"command": "python bench/attention_check.py --sm90", "date": "2026-01-01T00:00:00Z",
           "machine": {"gpu": "NVIDIA H200", "fact_commit": "abc1234"},
           "rows": [_row("llama3_8b_block_attention", "bf16", 1.731, 1.672, "b4a49be"),
                    _row("mingpt_attention_core", "tf32", 0.341, 1.785),
                    {"problem": "hf_llama_causal_attention", "policy": "bf16", "verified": False, "kernels": ["k"]}]}
    md = attention_check.render_md(doc, 20).splitlines()
    table = [line for line in md if line.startswith("| ") and "problem" not in line]
    assert len(table) == 2
    assert table[0].startswith("| llama3_8b_block_attention | bf16 | 1.731 | 1.672 | 0.97x |")
    assert table[0].endswith("| b4a49be |")
    assert table[1].endswith("| abc1234 |")  # no commit of its own: the machine block's
    assert "5.23x" in table[1]
    assert "median of 20 trials" in md[2]
