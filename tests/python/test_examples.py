"""Every example problem loads and exports to the graph docs/02 describes.

Models and inputs are moved to the meta device, so the large examples export without
allocating their operands.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import torch

from fact.export import export
from fact.problem import ProblemError, load_problem


def _meta_export(path: str) -> dict:
    problem = load_problem(path)
    for x in problem.inputs:
        assert isinstance(x, torch.Tensor) and x.device.type == "cpu"
    problem.to("meta")
    return export(problem.model, problem.inputs)


def _type(dtype: str, shape: list[int]) -> dict:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= s
    return {"dtype": dtype, "shape": shape, "strides": strides}


CASES = {
    "square_4096.py": ("aten.matmul.default", [[4096, 4096], [4096, 4096]], [4096, 4096]),
    "batched_128x512x1024x2048.py": ("aten.bmm.default",
                                     [[128, 512, 1024], [128, 1024, 2048]], [128, 512, 2048]),
    "large_k_256x256x524288.py": ("aten.matmul.default", [[256, 524288], [524288, 256]],
                                  [256, 256]),
}


@pytest.mark.parametrize("fname", sorted(CASES))
def test_fp32_gemm_examples(examples_dir: str, fname: str) -> None:
    op, in_shapes, out_shape = CASES[fname]
    g = _meta_export(os.path.join(examples_dir, fname))
    assert g["name"] == "Model"
    assert g["params"] == []
    # FX names placeholders after the forward's parameters, lower-cased (A -> a).
    assert g["inputs"] == [
        {"name": "a", "kind": "user_input", "type": _type("float32", in_shapes[0])},
        {"name": "b", "kind": "user_input", "type": _type("float32", in_shapes[1])},
    ]
    assert g["nodes"] == [{"name": g["nodes"][0]["name"], "op": op,
                           "args": [{"ref": "a"}, {"ref": "b"}], "kwargs": {},
                           "outputs": [{"name": g["nodes"][0]["name"],
                                        "type": _type("float32", out_shape)}]}]
    assert g["outputs"] == [{"ref": g["nodes"][0]["name"]}]


def test_linear_bf16_example(examples_dir: str) -> None:
    g = _meta_export(os.path.join(examples_dir, "linear_bf16_8192x4096x4096.py"))
    assert g["inputs"] == [{"name": "x", "kind": "user_input",
                            "type": _type("bfloat16", [8192, 4096])}]
    assert g["params"] == [
        {"name": "p_fc_weight", "kind": "parameter", "target": "fc.weight",
         "type": _type("bfloat16", [4096, 4096])},
        {"name": "p_fc_bias", "kind": "parameter", "target": "fc.bias",
         "type": _type("bfloat16", [4096])},
    ]
    assert g["nodes"] == [{"name": "linear", "op": "aten.linear.default",
                           "args": [{"ref": "x"}, {"ref": "p_fc_weight"}, {"ref": "p_fc_bias"}],
                           "kwargs": {},
                           "outputs": [{"name": "linear",
                                        "type": _type("bfloat16", [8192, 4096])}]}]


# KernelBench level 1 GEMM problems: (op, input shapes, output shape).
L1_CASES = {
    "L1-1_square.py": ("aten.matmul.default", [[4096, 4096], [4096, 4096]], [4096, 4096]),
    "L1-2_standard.py": ("aten.matmul.default", [[2048, 8192], [8192, 4096]], [2048, 4096]),
    "L1-3_batched.py": ("aten.bmm.default", [[128, 512, 1024], [128, 1024, 2048]],
                        [128, 512, 2048]),
    "L1-4_matvec.py": ("aten.matmul.default", [[2048, 1048576], [1048576, 1]], [2048, 1]),
    "L1-6_large_k.py": ("aten.matmul.default", [[256, 524288], [524288, 256]], [256, 256]),
    "L1-7_small_k.py": ("aten.matmul.default", [[32768, 64], [64, 32768]], [32768, 32768]),
    "L1-8_irregular.py": ("aten.matmul.default", [[8205, 2949], [2949, 5921]], [8205, 5921]),
    "L1-9_tall_skinny.py": ("aten.matmul.default", [[32768, 32], [32, 32768]], [32768, 32768]),
    "L1-10_3d_tensor_matrix.py": ("aten.matmul.default", [[16, 1024, 2048], [2048, 768]],
                                  [16, 1024, 768]),
    "L1-16_transposed_a.py": (None, [[8192, 2048], [8192, 4096]], [2048, 4096]),
    "L1-17_transposed_b.py": (None, [[2048, 8192], [4096, 8192]], [2048, 4096]),
    "L1-18_transposed_both.py": (None, [[8192, 2048], [4096, 8192]], [2048, 4096]),
}


@pytest.mark.parametrize("fname", sorted(L1_CASES))
def test_kernelbench_l1_gemm_examples(examples_dir: str, fname: str) -> None:
    op, in_shapes, out_shape = L1_CASES[fname]
    # On the meta device: #4's A alone is 8 GiB.
    with torch.device("meta"):
        problem = load_problem(os.path.join(examples_dir, "kernelbench_l1", fname))
    assert [list(x.shape) for x in problem.inputs] == in_shapes
    g = export(problem.model, problem.inputs)
    assert [i["type"]["shape"] for i in g["inputs"]] == in_shapes
    assert g["nodes"][-1]["outputs"][0]["type"]["shape"] == out_shape
    if op is not None:
        assert [n["op"] for n in g["nodes"]] == [op]
    else:  # A.T / B.T are views: a transpose (aten.t / permute) feeding one matmul
        assert g["nodes"][-1]["op"] == "aten.matmul.default"


def test_kernelbench_inputs_are_uniform_not_zeros(examples_dir: str) -> None:
    problem = load_problem(os.path.join(examples_dir, "kernelbench_l1", "L1-8_irregular.py"))
    a, b = problem.inputs
    assert 0.0 <= a.min().item() and a.max().item() < 1.0
    assert a.mean().item() == pytest.approx(0.5, abs=0.01)
    assert not torch.equal(a[:100, :100], b[:100, :100])


def test_example_inputs_are_random_not_zeros(examples_dir: str) -> None:
    problem = load_problem(os.path.join(examples_dir, "square_4096.py"))
    a, b = problem.inputs
    assert a.std().item() == pytest.approx(1.0, rel=0.01)
    assert not torch.equal(a, b)


def test_problem_without_model_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import torch\n\ndef get_inputs():\n    return [torch.randn(2)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    with pytest.raises(ProblemError, match="missing Model"):
        load_problem(str(path))


# examples/epilogue/: a GEMM and its elementwise tail: (first op, tail ops, x shape, out shape).
_L8192 = ([1024, 8192], [1024, 8192])
EPILOGUE_CASES = {
    "a_sub_mul_relu.py": (["sub.Tensor", "mul.Tensor", "relu.default"], *_L8192),
    "b_mul_leaky_relu.py": (["mul.Tensor", "leaky_relu.default"], *_L8192),
    "c_relu_div.py": (["relu.default", "div.Tensor"], *_L8192),
    "d_add_bias_relu.py": (["add.Tensor", "relu.default"], *_L8192),
    "e_div_gelu.py": (["div.Tensor", "gelu.default"], *_L8192),
    "f_mul_hardtanh_gelu.py": (["mul.Tensor", "hardtanh.default", "gelu.default"], *_L8192),
    "g_swish_div_clamp_tanh_clamp.py": (["sigmoid.default", "mul.Tensor", "div.Tensor",
                                         "clamp.default", "tanh.default", "clamp.default"],
                                        *_L8192),
    "h_add_swish_tanh_gelu_hardtanh.py": (["add.Tensor", "sigmoid.default", "mul.Tensor",
                                           "tanh.default", "gelu.default",
                                           "hardtanh.default"], *_L8192),
    "i_sigmoid_times_2_plus_x.py": (["sigmoid.default", "mul.Tensor", "add.Tensor"], *_L8192),
    "wide_swish_mul.py": (["sigmoid.default", "mul.Tensor", "mul.Tensor"],
                          [128, 32768], [128, 32768]),
    "mingpt_mlp.py": (["mul.Tensor", "pow.Tensor_Scalar", "mul.Tensor", "add.Tensor",
                       "mul.Tensor", "tanh.default", "add.Tensor", "mul.Tensor",
                       "linear.default"], [64, 1024, 768], [64, 1024, 768]),
}


@pytest.mark.parametrize("fname", sorted(EPILOGUE_CASES))
def test_epilogue_examples(examples_dir: str, fname: str) -> None:
    tail, x_shape, out_shape = EPILOGUE_CASES[fname]
    # On the meta device: wide_swish_mul's weight alone is 4 GiB.
    with torch.device("meta"):
        problem = load_problem(os.path.join(examples_dir, "epilogue", fname))
    assert [list(x.shape) for x in problem.inputs] == [x_shape]
    assert problem.inputs[0].dtype == torch.float32
    g = export(problem.model, problem.inputs)
    ops = [n["op"] for n in g["nodes"]]
    assert ops[0] == "aten.linear.default"
    assert ops[1:] == [f"aten.{t}" for t in tail]
    assert g["nodes"][-1]["outputs"][0]["type"]["shape"] == out_shape
    # The tail's vectors are parameters of shape [N] (a vector along N for the epilogue).
    vectors = [p for p in g["params"] if p["target"] in ("bias", "add_value")]
    assert [p["type"]["shape"] for p in vectors] == (
        [[8192]] if fname[0] in "dh" else [])


def _import_example(path: str):
    """The example file as a module, without building its full-size model and inputs."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("example_" + os.path.basename(path)[:-3],
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_epilogue_examples_small_forward(examples_dir: str) -> None:
    # The models at small widths, on CPU: the tails compute what their docstrings say.
    x = torch.randn(4, 32)
    for fname, init, want in [
            ("a_sub_mul_relu.py", [32, 16, 2.0, 1.5], lambda h: torch.relu((h - 2) * 1.5)),
            ("i_sigmoid_times_2_plus_x.py", [32, 16, 2.0], lambda h: torch.sigmoid(h) * 2 + h),
            ("wide_swish_mul.py", [32, 16, 2.0], lambda h: h * torch.sigmoid(h) * 2)]:
        model = _import_example(os.path.join(examples_dir, "epilogue", fname)).Model(*init)
        with torch.no_grad():
            torch.testing.assert_close(model(x), want(model.linear(x)))
    model = _import_example(os.path.join(examples_dir, "epilogue", "mingpt_mlp.py")).Model(8)
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        h = model.c_fc(x)
        want = model.c_proj(torch.nn.functional.gelu(h, approximate="tanh"))
        torch.testing.assert_close(model(x), want, rtol=1e-5, atol=1e-5)


def test_epilogue_suite_lists_the_examples_and_times_torch_compile(
        examples_dir: str, repo_root: str, monkeypatch) -> None:
    monkeypatch.syspath_prepend(os.path.join(repo_root, "bench"))
    import suite
    names = sorted(os.path.splitext(f)[0] for f in EPILOGUE_CASES)
    assert sorted(os.path.basename(e) for e, _ in suite.SUITES["epilogue"]) == names
    assert {pol for _, pol in suite.SUITES["epilogue"]} == {"tf32"}
    for example, _ in suite.SUITES["epilogue"]:
        assert os.path.isfile(os.path.join(examples_dir, f"{example}.py"))
    seen = []
    monkeypatch.setattr(suite, "_run_one",
                        lambda run, args, path: seen.append(args.inductor) or (1, ""))
    assert suite.main(["epilogue", "--only", "c_relu_div"]) == 1  # no results: fine here
    assert suite.main(["gemm", "--only", "L1-1_square", "--precision", "tf32"]) == 1
    assert seen == [True, False]


def test_attention_suite_runs_and_times_torch_compile(repo_root: str, monkeypatch,
                                                      capsys) -> None:
    monkeypatch.syspath_prepend(os.path.join(repo_root, "bench"))
    import suite
    assert [(os.path.basename(e), pol) for e, pol in suite.SUITES["attention"]] == [
        ("L3-43_mingpt_attention", "tf32"), ("L3-43_mingpt_attention", "bf16"),
        ("L3-43_mingpt_attention", "fp32"), ("sdpa_attention", "tf32"),
        ("gqa_attention", "tf32"), ("gqa_attention_bf16", "bf16")]
    assert all(e.startswith("attention/") for e, _ in suite.SUITES["attention"])
    for example, _ in suite.SUITES["attention"]:
        assert os.path.isfile(os.path.join(repo_root, "examples", f"{example}.py")), example
    # bench/gpu_rows.sh runs each NAME:POLICY of --list on its own.
    assert suite.main(["attention", "--list", "--precision", "bf16"]) == 0
    assert capsys.readouterr().out == "L3-43_mingpt_attention:bf16\ngqa_attention_bf16:bf16\n"
    seen = []
    monkeypatch.setattr(suite, "_run_one",
                        lambda run, args, path: seen.append((*run, args.inductor))
                        or (1, ""))
    assert suite.main(["attention", "--only", "L3-43_mingpt_attention"]) == 1  # no results
    assert seen == [("attention/L3-43_mingpt_attention", "tf32", True),
                    ("attention/L3-43_mingpt_attention", "bf16", True),
                    ("attention/L3-43_mingpt_attention", "fp32", True)]


def test_m8_linear_is_one_linear_with_eight_rows(examples_dir: str) -> None:
    problem = load_problem(os.path.join(examples_dir, "gemm_shapes", "m8_linear.py"))
    assert [list(x.shape) for x in problem.inputs] == [[8, 4096]]
    g = export(problem.model, problem.inputs)
    assert [n["op"] for n in g["nodes"]] == ["aten.linear.default"]
    assert g["nodes"][-1]["outputs"][0]["type"]["shape"] == [8, 4096]


def test_blocks_suite_runs_each_block_and_bf16_models_in_their_dtype(
        examples_dir: str, repo_root: str, monkeypatch, capsys) -> None:
    """The blocks suite: each example exists; NAME:POLICY picks the fp32 model's run only and
    NAME:POLICY:DTYPE the converted one, which gets --model-dtype."""
    monkeypatch.syspath_prepend(os.path.join(repo_root, "bench"))
    import suite
    for example, *_ in suite.SUITES["blocks"]:
        assert os.path.isfile(os.path.join(examples_dir, f"{example}.py")), example
    assert suite.main(["blocks", "--list", "--only", "llama3_8b_block"]) == 0
    assert capsys.readouterr().out == ("llama3_8b_block:tf32\nllama3_8b_block:bf16\n"
                                       "llama3_8b_block:bf16:bfloat16\n")
    cmds = []
    monkeypatch.setattr(suite.subprocess, "run",
                        lambda cmd, **kw: cmds.append(cmd) or subprocess.CompletedProcess(cmd, 1))
    assert suite.main(["blocks", "--only", "llama3_8b_block:bf16:bfloat16"]) == 1  # no result
    assert len(cmds) == 1 and cmds[0][cmds[0].index("--model-dtype") + 1] == "bfloat16"
    assert "--inductor" in cmds[0] and cmds[0][cmds[0].index("--precision") + 1] == "bf16"
    assert suite.main(["blocks", "--only", "llama3_8b_block:bf16"]) == 1
    assert "--model-dtype" not in cmds[1]


def test_cast_converts_model_and_floating_inputs_only(tmp_path) -> None:
    """``fact optimize --model-dtype bfloat16``: the model and float inputs, not int ones."""
    src = tmp_path / "emb.py"
    src.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = torch.nn.Linear(4, 3)\n"
        "    def forward(self, x, idx):\n"
        "        return self.lin(x)[idx]\n"
        "def get_inputs():\n"
        "    return [torch.randn(5, 4), torch.tensor([0, 2])]\n"
        "def get_init_inputs():\n"
        "    return []\n")
    problem = load_problem(str(src)).cast(torch.bfloat16)
    assert problem.model.lin.weight.dtype == torch.bfloat16
    assert [x.dtype for x in problem.inputs] == [torch.bfloat16, torch.int64]
    assert problem.model(*problem.inputs).shape == (2, 3)
