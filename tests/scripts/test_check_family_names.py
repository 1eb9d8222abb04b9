"""scripts/check_family_names.py: family and rule names compared outside their family fail."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_family_names", ROOT / "scripts" / "check_family_names.py")
check_family_names = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_family_names)


def _tree(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    base = {
        "src/families/gemm/rule.cpp": 'Rule r{.name = "gemm"};\nif (p.rule == "gemm") {}\n',
        "src/families/attention/rule.cpp": 'Rule r{.name = "attention", };\n',
        "src/families/family_list.cpp": 'bool b = k == "attention";\n',
        "python/fact/families/__init__.py": 'ok = x == "gemm"\n',
        "python/fact/families/gemm.py": 'def f(x):\n    return x == "gemm"\n',
    }
    base.update(files)
    for rel, text in base.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_names_come_from_family_folders_and_rules(tmp_path):
    root = _tree(tmp_path, {"src/families/gemm/rules/bmm.cpp": 'R r{.name = "gemm_bmm"};\n'})
    fams = check_family_names.family_names(root)
    assert fams == {"attention": {"attention"}, "gemm": {"gemm", "gemm_bmm"}}


def test_a_clean_tree_passes(tmp_path, capsys):
    root = _tree(tmp_path, {
        "src/discover/planner.cpp": '// the "gemm" rule: named in a comment only\nfor (auto& f : families()) {}\n',
        "python/fact/runtime.py": '"""Docstring naming ``"attention"`` == "attention" is text."""\nx = 1  # == "gemm"\n',
    })
    assert check_family_names.check(root) == []
    assert check_family_names.main(["x", str(root)]) == 0
    assert "no family or rule named outside its folder" in capsys.readouterr().out


def test_comparisons_outside_the_family_fail(tmp_path):
    root = _tree(tmp_path, {
        "src/discover/planner.cpp": 'if (p.rule != "gemm") continue;\n',
        "src/compose/report.cpp": 'int a;\nif ("attention" == abi) {}\n',
        "src/compose/kinds.h": 'constexpr const char* kAttention = "attention";\n',
        "src/families/attention/uses_gemm.cpp": 'bool g = rule == "gemm";\n',
        "python/fact/runtime.py": 'if abi.name in ("gemm", "x"):\n    pass\nif s.startswith("attention"):\n    pass\n',
    })
    found = check_family_names.check(root)
    where = sorted(line.split(": ", 1)[0] for line in found)
    assert where == ["python/fact/runtime.py:1", "python/fact/runtime.py:3", "src/compose/kinds.h:1",
                     "src/compose/report.cpp:2", "src/discover/planner.cpp:1",
                     "src/families/attention/uses_gemm.cpp:1"]
    assert all("compares the name" in line for line in found)
    assert check_family_names.main(["x", str(root)]) == 1


def test_a_tree_without_families_fails(tmp_path):
    (tmp_path / "src").mkdir()
    assert check_family_names.check(tmp_path) != []


def test_python_is_read_by_its_syntax_tree():
    source = ('if abi == "gemm": pass\nok = kind in ("x", "attention")\n'
              'y = TABLE["gemm"]\nmatch r:\n    case "attention": pass\nz = {"gemm": 1}\n'
              'w = name.startswith("gemm")\nv = "gemm"  # a value, not a comparison\n')
    assert check_family_names.python_compared_names(source, {"gemm", "attention"}) == [
        (1, "gemm"), (2, "attention"), (3, "gemm"), (5, "attention"), (7, "gemm")]


def test_the_family_interface_module_is_not_a_family(tmp_path):
    root = _tree(tmp_path, {"python/fact/families/family.py": 'def f(x):\n    return x == "attention"\n'})
    assert [line.split(": ", 1)[0] for line in check_family_names.check(root)] == ["python/fact/families/family.py:2"]


def test_a_family_header_included_outside_its_folder_fails(tmp_path):
    root = _tree(tmp_path, {
        "src/discover/plan.h": '#include "families/gemm/epilogue/epilogue.h"\n#include "families/family.h"\n',
        "src/families/attention/problem.h": '#include "families/gemm/problem.h"\n',
        "src/families/gemm/family.cpp": '#include "families/gemm/space.h"\n',
    })
    found = check_family_names.check(root)
    assert found == [
        "src/discover/plan.h:1: #include \"families/gemm/epilogue/epilogue.h\"  (includes family 'gemm')",
        "src/families/attention/problem.h:1: #include \"families/gemm/problem.h\"  (includes family 'gemm')",
    ]
