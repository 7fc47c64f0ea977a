"""Writes the large bundles of bundle-errors.test (too large to keep in the
repository): generate.py KIND DIRECTORY writes DIRECTORY/bundle.json, and
DIRECTORY/k.ptx for the bundle to name.

deep         100,000 nested JSON arrays
nested_expr  a launch expression nested 30,000 deep (240 KB)
nested_100   the same, 100 deep (under the size limit, over the depth one)
affine_deep  100,000 nested parentheses in an affine map (200 KB)
affine_100   the same, 100 deep
"""

import json
import os
import sys


def bundle(grid_x):
    return json.dumps({
        "version": 1,
        "binaries": [{"name": "k", "file": "k.ptx", "format": "ptx",
                      "target": "#nvvm.target<chip = \"sm_90\">"}],
        "functions": [{
            "name": "attention",
            "args": ["memref<?x?x?x64xf16>"] * 4,
            "launches": [{"module": "k", "kernel": "k",
                          "grid": [grid_x, "1", "1"],
                          "block": ["128", "1", "1"],
                          "operands": ["%arg0", "%arg1", "%arg2", "%arg3"]}]}]})


def nested(depth):
    return "add(" * depth + "1" + ", 1)" * depth


def affine(depth):
    return ("affine(()[s0] -> (" + "(" * depth + "s0" + ")" * depth +
            "), [dim(%arg0, 2)])")


def main():
    kind, directory = sys.argv[1], sys.argv[2]
    text = {
        "deep": lambda: "[" * 100000 + "]" * 100000,
        "nested_expr": lambda: bundle(nested(30000)),
        "nested_100": lambda: bundle(nested(100)),
        "affine_deep": lambda: bundle(affine(100000)),
        "affine_100": lambda: bundle(affine(100)),
    }[kind]()
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "bundle.json"), "w") as f:
        f.write(text)
    with open(os.path.join(directory, "k.ptx"), "w") as f:
        f.write(".version 8.0\n.target sm_90\n.address_size 64\n")


if __name__ == "__main__":
    main()
