#!/usr/bin/env python3
"""Writes a deepbelief mlp.json's net as bench/toman_fann.c reads it: the number of layers,
their sizes, then per layer its n_in × n_out weights (row i for input i) and its n_out biases.

    python3 bench/toman_fann.py mlp.json weights.txt
"""
import json
import sys

net = json.load(open(sys.argv[1]))["network"]
sizes = [net["layers"][0]["n_in"]] + [layer["n_out"] for layer in net["layers"]]
with open(sys.argv[2], "w") as out:
    out.write(f"{len(sizes)}\n{' '.join(map(str, sizes))}\n")
    for layer in net["layers"]:
        out.write(" ".join(repr(float(w)) for w in layer["weights"]) + "\n")
        out.write(" ".join(repr(float(b)) for b in layer["bias"]) + "\n")
