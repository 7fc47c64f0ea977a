"""Writes the bundles of bundle-errors.test (format attn-kernel-bundle,
version 2; docs/Bundles.md).

  generate.py inputs DIRECTORY   the small ones kept in the repository (this
                                 directory: run it again after a format
                                 change), with k.ptx for them to name
  generate.py KIND DIRECTORY     one too large to keep, as
                                 DIRECTORY/bundle.json, with DIRECTORY/k.ptx

KIND:
  deep          100,000 nested JSON arrays
  nested_expr   a launch expression nested 30,000 deep (past the JSON limit)
  nested_100    the same, 100 deep (under the JSON limit, over the
                expression one)
  many_values   2^18 kernel operands: more JSON values than the reader takes
"""

import copy
import json
import os
import sys

INT64_MIN = -(2**63)
PTX = ("// A stand-in: bundle errors are found before any kernel loads.\n"
       ".version 8.0\n.target sm_90\n.address_size 64\n")


def const(value):
    return {"const": value}


def dim(arg, index):
    return {"dim": {"arg": arg, "index": index}}


def op(name, lhs, rhs):
    return {"op": name, "lhs": lhs, "rhs": rhs}


def buffer(arg):
    return {"kind": "buffer", "arg": arg}


def attention():
    """Causal f16 attention with a logsumexp, dynamic sizes, D = 64, as
    attn-write-kernel-bundle writes it for attn-run's variant."""
    head = [None, None, None, 64]
    return {
        "format": "attn-kernel-bundle",
        "version": 2,
        "binaries": [{"name": "k", "file": "k.ptx", "format": "ptx",
                      "target": "#nvvm.target<chip = \"sm_90\">"}],
        "functions": [{
            "name": "attention",
            "args": [{"name": "q", "dtype": "f16", "shape": head},
                     {"name": "k", "dtype": "f16", "shape": head},
                     {"name": "v", "dtype": "f16", "shape": head},
                     {"name": "out", "dtype": "f16", "shape": head},
                     {"name": "lse", "dtype": "f32",
                      "shape": [None, None, None]}],
            "computes": [{"op": "attention", "dtype": "f16", "head_dim": 64,
                          "value_head_dim": 64, "scale": 0.125,
                          "causal": True, "logsumexp": True,
                          "block_mask": False, "mask_mod": None,
                          "score_mod": None}],
            "shape_contract": {"constraints": [
                {"kind": "equal", "lhs": [1, 0], "rhs": [0, 0],
                 "what": "batch"},
                {"kind": "multiple_of", "lhs": [0, 1], "rhs": [1, 1],
                 "what": "heads"},
                {"kind": "equal", "lhs": [3, 2], "rhs": [0, 2],
                 "what": "query length"},
                {"kind": "at_least", "lhs": [1, 2], "rhs": [0, 2],
                 "what": "kv length, causal from the first key"}]},
            "launches": [{
                "module": "k", "kernel": "k",
                "grid": [op("ceildiv", dim("q", 2), const(64)), dim("q", 1),
                         dim("q", 0)],
                "block": [const(128), const(1), const(1)],
                "shared_memory_bytes": op("mul", dim("q", 3), const(1024)),
                "workspace_bytes": const(0),
                "operands": [buffer("q"), buffer("k"), buffer("v"),
                             buffer("out"), buffer("lse"),
                             {"kind": "f32", "value": 0.125}]}]}]}


def variant(change):
    bundle = attention()
    change(bundle, bundle["functions"][0],
           bundle["functions"][0]["launches"][0])
    return bundle


def set_grid_x(value):
    return lambda b, f, launch: launch["grid"].__setitem__(0, value)


# The bundle of version 1 (launch expressions as strings): refused.
VERSION_1 = {
    "version": 1,
    "binaries": [{"name": "k", "file": "k.ptx", "format": "ptx",
                  "target": "#nvvm.target<chip = \"sm_90\">"}],
    "functions": [{"name": "attention", "args": ["memref<?x?x?x64xf16>"] * 4,
                   "launches": [{"module": "k", "kernel": "k",
                                 "grid": ["dim(%arg0, 2)", "1", "1"],
                                 "block": ["128", "1", "1"],
                                 "operands": ["%arg0", "%arg1", "%arg2",
                                              "%arg3"]}]}]}

INPUTS = {
    "contract.json": attention,
    "bad_contract.json": lambda: variant(
        lambda b, f, l: f["shape_contract"]["constraints"][2].__setitem__(
            "lhs", [7, 2])),
    "bad_type.json": lambda: variant(
        lambda b, f, l: f["args"][2].__setitem__("dtype", "f8")),
    "dangling.json": lambda: variant(
        lambda b, f, l: l["operands"].__setitem__(3, buffer("kk"))),
    "div_zero.json": lambda: variant(set_grid_x(
        op("ceildiv", dim("q", 2), op("sub", dim("k", 2), dim("q", 2))))),
    "intmin.json": lambda: variant(set_grid_x(
        op("div", const(INT64_MIN), const(-1)))),
    "floordiv_intmin.json": lambda: variant(set_grid_x(
        op("floordiv", const(INT64_MIN), const(-1)))),
    "passwd.json": lambda: variant(
        lambda b, f, l: b["binaries"][0].__setitem__(
            "file", "../../../../../../../etc/passwd")),
    "devzero.json": lambda: variant(
        lambda b, f, l: b["binaries"][0].__setitem__(
            "file", "../../../../../../../dev/zero")),
    "prefix_mask.json": lambda: variant(
        lambda b, f, l: f["computes"][0].update(
            causal=False,
            mask_mod={"name": "prefix:4", "digest": "8e2a4c5d0f1b3a79"})),
    "version1.json": lambda: copy.deepcopy(VERSION_1),
}


def nested(depth):
    expr = const(1)
    for _ in range(depth):
        expr = op("add", expr, const(1))
    return expr


def many_values():
    return variant(lambda b, f, l: l["operands"].extend(
        [{"kind": "int", "value": const(0)}] * (1 << 18)))


LARGE = {
    "deep": lambda: "[" * 100000 + "]" * 100000,
    # json.dumps recurses once per level: build the deep text by hand.
    "nested_expr": lambda: json.dumps(variant(set_grid_x("@"))).replace(
        '"@"', '{"op": "add", "lhs": ' * 30000 + '{"const": 1}' +
        ', "rhs": {"const": 1}}' * 30000),
    "nested_100": lambda: json.dumps(variant(set_grid_x(nested(100)))),
    "many_values": lambda: json.dumps(many_values()),
}


def write(directory, name, text):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as f:
        f.write(text)


def main():
    kind, directory = sys.argv[1], sys.argv[2]
    if kind == "inputs":
        for name, make in INPUTS.items():
            write(directory, name, json.dumps(make(), indent=1) + "\n")
    else:
        write(directory, "bundle.json", LARGE[kind]())
    write(directory, "k.ptx", PTX)


if __name__ == "__main__":
    main()
