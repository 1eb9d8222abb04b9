"""A stand-in for the engine's CLI, for testing the Python pipeline without it.

discover: one gemm pattern per mm/matmul/linear/bmm node. realize: "gpu" null unless
$FAKE_FACTC_GPU is set, in which case the vendor candidate wins. compose: an all-vendor
artifact, or, when $FAKE_FACTC_PATTERNS names a JSON file, exactly the manifest patterns it
lists, with $FAKE_FACTC_LIBRARY copied as libfact_kernels.so. Usage mirrors factc:
discover G -o P --policy X; realize P --policy X -o R; compose P R --graph G -o DIR.
"""

import json
import os
import shutil
import sys

GEMM_OPS = {"aten.mm.default", "aten.bmm.default", "aten.matmul.default",
            "aten.linear.default", "aten.addmm.default"}


def _opt(args, name):
    return args[args.index(name) + 1]


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "discover":
        graph = json.load(open(args[0]))
        patterns = [{"id": f"p{i}", "rule": "gemm", "priority": i, "nodes": [n["name"]],
                     "output": n["name"],
                     "operands": {"a": n["args"][0]["ref"], "b": n["args"][1]["ref"]},
                     "problem": {"kind": "gemm"}, "estimate": {}, "vetted_example": None}
                    for i, n in enumerate(x for x in graph["nodes"] if x["op"] in GEMM_OPS)]
        plan = {"format": "fact.plan", "version": 1, "graph": graph["name"],
                "patterns": patterns, "rejected": [], "fallback": []}
        json.dump(plan, open(_opt(args, "-o"), "w"))
    elif cmd == "realize":
        plan = json.load(open(args[0]))
        gpu = os.environ.get("FAKE_FACTC_GPU")
        pats = []
        for p in plan["patterns"]:
            cands = [{"kernel": f"cutlass3x_fake_{p['id']}", "impl": "cutlass",
                      "status": "ok" if gpu else "built"}]
            if gpu:
                cands.append({"kernel": "cublas_fake", "impl": "vendor", "status": "ok",
                              "median_ms": 1.0})
            pats.append({"id": p["id"], "compile_s": 1.0, "candidates": cands,
                         "winner": "cublas_fake" if gpu else None})
        realized = {"format": "fact.realized", "version": 1, "policy": _opt(args, "--policy"),
                    "gpu": gpu or None, "cutlass": "4.2.0", "cache": "/tmp/fake-cache",
                    "patterns": pats}
        json.dump(realized, open(_opt(args, "-o"), "w"))
    elif cmd == "compose":
        plan, realized = json.load(open(args[0])), json.load(open(args[1]))
        if realized["gpu"] is None:
            print("realized.json holds no verified kernels", file=sys.stderr)
            return 1
        out = _opt(args, "-o")
        os.makedirs(out, exist_ok=True)
        shutil.copy(_opt(args, "--graph"), os.path.join(out, "graph.json"))
        pats = [dict(p, impl="vendor", kernel="cublas_fake", symbol=None, workspace_bytes=0,
                     verified=True) for p in plan["patterns"]]
        library = None
        if os.environ.get("FAKE_FACTC_PATTERNS"):
            pats = json.load(open(os.environ["FAKE_FACTC_PATTERNS"]))
            library = "libfact_kernels.so"
            shutil.copy(os.environ["FAKE_FACTC_LIBRARY"], os.path.join(out, library))
        manifest = {"format": "fact.manifest", "version": 1, "policy": realized["policy"],
                    "library": library, "graph": "graph.json", "patterns": pats}
        json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"))
    else:
        print(f"fake factc: unknown command {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
