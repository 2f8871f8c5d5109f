#!/usr/bin/env python3
"""The NumPy peer of `deepbelief::recurrent` (issue 20): Moore's (2009) real-time recurrent
learning written plainly in vectorised NumPy, the same algorithm step for step.

One step is Moore's RNN::process: feed forward (layers in increasing order, tanh), dE/dy = y - d,
E = 1/2 sum (y - d)^2, the history (for every weight block w^{m,n} and every layer i that can
depend on it, the sensitivity tensor xi^{mn,i}, an n_i x P array with P = rows x cols of the block,
element [j, s*cols + t] = d a^i_j / d w_{s,t}:

    xi^{mn,i} = sigma'(net^i) * ( sum_k W^{ik} @ xi^{mn,k} + sum_q M^{iq} @ xi_prev^{mn,q}
                                  + [i = m] delta_{j,s} a^n_t ) ),

layers in increasing order, this step's weights), the gradient dE/dw = dE/dy @ xi^{mn,y}, and the
Euler step w -= rate * dE/dw. With the shortcut (the default, Moore's dE/dnet optimisation) the
blocks into a layer whose paths to the output use no recurrent edge take plain back-propagation
within the step instead of tensors. Graphs, parameter layout, initial weights (Philox,
InitialWeights, step 1000 + block index, uniform in +-scale/sqrt(fan-in), biases too) and the
adder's examples (Philox, DataSample, step = position) are the crate's, so both start from the
same point and see the same examples.

Modes, each printing JSON:

- sweep (default): microseconds per step on Moore's n-bit adder (2n inputs, 2n hidden, n outputs;
  --preset elman|jordan|feedforward) for each n of --sizes (16,32,64,96,128), as
  `deepbelief bench --rtrl` measures it: --warmups untimed steps, then --repeats runs of --steps
  steps; one JSON line per n with the median and minimum and the mean E of the timed steps (which
  equals the crate's to float32 rounding, a check by itself).
- --check FILE: replays a `deepbelief rtrl` run (its recurrent.json: graph, task add or not,
  trainer rtrl, rate, init_scale, seed, steps) from the same initial weights in float32 and in
  float64, and compares the final weights with the file's: prints the largest difference relative
  to the largest weight, and fails above --tolerance.

usage: rtrl_numpy.py [--sizes 16,32,...] [--preset elman] [--steps 20] [--repeats 3] [--no-shortcut]
       rtrl_numpy.py --check out/recurrent.json [--tolerance 1e-4]
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from autoencoder_numpy import PURPOSE_DATA_SAMPLE, PURPOSE_INITIAL_WEIGHTS, check_philox, uniforms
from idx import blas_threads

TRUE, FALSE = 0.3, -0.3


def preset_graph(preset, inputs, hidden, outputs):
    edges = [dict(**{"from": 0}, to=1, kind="feed_forward"), dict(**{"from": 1}, to=2, kind="feed_forward")]
    if preset == "elman":
        edges.append(dict(**{"from": 1}, to=1, kind="recurrent"))
    elif preset == "jordan":
        edges.append(dict(**{"from": 2}, to=1, kind="recurrent"))
    return {"layers": [inputs, hidden, outputs], "edges": edges, "biases": True}


def blocks_of(graph):
    """GraphSpec::blocks: one block per edge in order, then a bias per computing layer."""
    layers, blocks, offset = graph["layers"], [], 0
    for e in graph["edges"]:
        kind = "layer" if e["kind"] == "feed_forward" else "previous"
        blocks.append(dict(to=e["to"], kind=kind, src=e["from"], rows=layers[e["to"]], cols=layers[e["from"]], offset=offset))
        offset += layers[e["to"]] * layers[e["from"]]
    if graph["biases"]:
        for i in range(1, len(layers)):
            blocks.append(dict(to=i, kind="bias", src=None, rows=layers[i], cols=1, offset=offset))
            offset += layers[i]
    return blocks, offset


def reachable(graph, m, recurrent_too):
    seen, stack = {m}, [m]
    while stack:
        at = stack.pop()
        for e in graph["edges"]:
            if e["from"] == at and (recurrent_too or e["kind"] == "feed_forward") and e["to"] not in seen:
                seen.add(e["to"])
                stack.append(e["to"])
    return seen


def shortcut_layers(graph):
    count, out = len(graph["layers"]), len(graph["layers"]) - 1
    reaches_output = [out in reachable(graph, z, True) for z in range(count)]
    result = []
    for m in range(count):
        below = reachable(graph, m, False)
        result.append(m > 0 and not any(e["kind"] == "recurrent" and e["from"] in below and reaches_output[e["to"]] for e in graph["edges"]))
    return result


def initialise(graph, seed, scale):
    """Network::initialise, bit for bit in float32."""
    blocks, total = blocks_of(graph)
    fan_in = [0] * len(graph["layers"])
    for b in blocks:
        fan_in[b["to"]] += b["cols"]
    params = np.zeros(total, np.float32)
    for index, b in enumerate(blocks):
        r = np.float32(scale) / np.sqrt(np.float32(fan_in[b["to"]]))
        u = uniforms(seed, 1000 + index, PURPOSE_INITIAL_WEIGHTS, b["rows"] * b["cols"]).astype(np.float32)
        params[b["offset"]:b["offset"] + b["rows"] * b["cols"]] = (np.float32(2.0) * u - np.float32(1.0)) * r
    return params


def example(task, seed, step):
    """TaskStream::next_example for add and not."""
    signal = lambda bits: np.where(bits, np.float32(TRUE), np.float32(FALSE)).astype(np.float32)
    if task["task"] == "not":
        x = uniforms(seed, step, PURPOSE_DATA_SAMPLE, 1) < 0.5
        return signal(x), signal(~x)
    n = task["bits"]
    drawn = uniforms(seed, step, PURPOSE_DATA_SAMPLE, 2 * n) < 0.5
    a, b = drawn[:n], drawn[n:]
    carry, target = False, []
    for i in range(n):
        target.append(a[i] ^ b[i] ^ carry)
        carry = (a[i] and b[i]) or (carry and (a[i] ^ b[i]))
    return signal(drawn), signal(np.array(target))


class Rtrl:
    def __init__(self, graph, params, shortcut, dtype):
        self.graph, self.dtype = graph, dtype
        self.layers = graph["layers"]
        self.blocks, _ = blocks_of(graph)
        self.params = params.astype(dtype)
        self.views = [self.params[b["offset"]:b["offset"] + b["rows"] * b["cols"]].reshape(b["rows"], b["cols"]) for b in self.blocks]
        cut = shortcut_layers(graph) if shortcut else [False] * len(self.layers)
        self.shortcut = cut
        sources = {e["from"] for e in graph["edges"] if e["kind"] == "recurrent"}
        self.sources = sources
        self.tensors = []
        for b in self.blocks:
            if cut[b["to"]]:
                self.tensors.append(None)
                continue
            deps = reachable(graph, b["to"], True)
            p = b["rows"] * b["cols"]
            current = {i: np.zeros((self.layers[i], p), dtype) for i in range(1, len(self.layers)) if i in deps}
            previous = {i: np.zeros((self.layers[i], p), dtype) for i in current if i in sources}
            self.tensors.append((deps, current, previous))
        zeros = lambda: [np.zeros(n, dtype) for n in self.layers]
        self.act, self.deriv = zeros(), zeros()
        self.prev_act = zeros()

    def step(self, x, d, rate):
        # cycleLayers (before the step): the last frame and tensors become the previous ones.
        self.prev_act = self.act
        for t in self.tensors:
            if t is not None:
                _, current, previous = t
                for i in previous:
                    current[i], previous[i] = previous[i], current[i]
        act, deriv = [None] * len(self.layers), [None] * len(self.layers)
        act[0] = x.astype(self.dtype)
        for i in range(1, len(self.layers)):
            net = np.zeros(self.layers[i], self.dtype)
            for b, w in zip(self.blocks, self.views):
                if b["to"] != i:
                    continue
                if b["kind"] == "layer":
                    net += w @ act[b["src"]]
                elif b["kind"] == "previous":
                    net += w @ self.prev_act[b["src"]]
                else:
                    net += w[:, 0]
            act[i] = np.tanh(net)
            deriv[i] = 1 - act[i] * act[i]
        self.act, self.deriv = act, deriv
        out = len(self.layers) - 1
        de_dy = act[out] - d.astype(self.dtype)
        error = 0.5 * float(np.dot(de_dy.astype(np.float64), de_dy.astype(np.float64)))
        gradients = [None] * len(self.blocks)
        for index, (b, t) in enumerate(zip(self.blocks, self.tensors)):
            if t is None:
                continue
            deps, current, previous = t
            source = self.source(b)
            for i in range(1, len(self.layers)):
                if i not in deps:
                    continue
                total = np.zeros_like(current[i])
                for c, w in zip(self.blocks, self.views):
                    if c["to"] != i:
                        continue
                    if c["kind"] == "layer" and c["src"] > 0 and c["src"] in deps:
                        total += w @ current[c["src"]]
                    elif c["kind"] == "previous" and c["src"] > 0 and c["src"] in deps:
                        total += w @ previous[c["src"]]
                if i == b["to"]:
                    rows, cols = b["rows"], b["cols"]
                    view = total.reshape(self.layers[i], rows, cols)
                    view[np.arange(rows), np.arange(rows), :] += source
                total *= deriv[i][:, None]
                current[i] = total
            gradients[index] = de_dy @ current[out] if out in deps else np.zeros(b["rows"] * b["cols"], self.dtype)
        if any(t is None for t in self.tensors):
            delta = [None] * len(self.layers)
            for i in range(len(self.layers) - 1, 0, -1):
                if not self.shortcut[i]:
                    continue
                e = de_dy.copy() if i == out else np.zeros(self.layers[i], self.dtype)
                for c, w in zip(self.blocks, self.views):
                    if c["kind"] == "layer" and c["src"] == i:
                        e += w.T @ delta[c["to"]]
                delta[i] = e * deriv[i]
            for index, b in enumerate(self.blocks):
                if self.tensors[index] is None:
                    gradients[index] = np.outer(delta[b["to"]], self.source(b)).ravel()
        for b, g in zip(self.blocks, gradients):
            self.params[b["offset"]:b["offset"] + b["rows"] * b["cols"]] -= self.dtype(rate) * g.astype(self.dtype)
        return error

    def source(self, b):
        if b["kind"] == "layer":
            return self.act[b["src"]]
        if b["kind"] == "previous":
            return self.prev_act[b["src"]]
        return np.ones(1, self.dtype)


def sweep(args):
    rows = []
    for n in args.sizes:
        graph = preset_graph(args.preset, 2 * n, 2 * n, n)
        rtrl = Rtrl(graph, initialise(graph, args.seed, 2.0), not args.no_shortcut, np.float32)
        task, position = {"task": "add", "bits": n}, 0
        for _ in range(args.warmups):
            x, d = example(task, args.seed, position)
            position += 1
            rtrl.step(x, d, args.rate)
        per_step, error = [], 0.0
        for _ in range(args.repeats):
            examples = [example(task, args.seed, position + k) for k in range(args.steps)]
            position += args.steps
            start = time.perf_counter()
            for x, d in examples:
                error += rtrl.step(x, d, args.rate)
            per_step.append(1e6 * (time.perf_counter() - start) / args.steps)
        row = {"peer": "numpy", "bits": n, "preset": args.preset, "mode": "full" if args.no_shortcut else "shortcut", "layers": graph["layers"],
               "steps": args.steps, "microseconds_per_step": statistics.median(per_step), "microseconds_per_step_min": min(per_step),
               "repeats_us": per_step, "mean_error": error / (args.steps * args.repeats), "blas_threads": blas_threads(), "numpy": np.__version__}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def check(args):
    with open(args.check) as f:
        saved = json.load(f)
    if saved["trainer"]["trainer"] != "rtrl" or saved["task"]["task"] not in ("add", "not"):
        raise SystemExit(f"{args.check}: --check replays rtrl runs of the add and not tasks; this is {saved['trainer']} on {saved['task']}")
    graph, ours = saved["graph"], np.array(saved["params"], np.float32)
    initial = initialise(graph, saved["seed"], saved["init_scale"])
    result = {"file": args.check, "steps": saved["steps"], "layers": graph["layers"], "mode": saved["trainer"]["mode"]}
    scale = float(np.max(np.abs(ours)))
    for dtype in (np.float32, np.float64):
        rtrl = Rtrl(graph, initial, saved["trainer"]["mode"] == "shortcut", dtype)
        for step in range(saved["steps"]):
            x, d = example(saved["task"], saved["seed"], step)
            rtrl.step(x, d, np.float32(saved["rate"]))
        difference = float(np.max(np.abs(rtrl.params.astype(np.float64) - ours.astype(np.float64)))) / scale
        result[f"relative_difference_{np.dtype(dtype).name}"] = difference
    result["ok"] = result["relative_difference_float32"] <= args.tolerance and result["relative_difference_float64"] <= args.tolerance
    print(json.dumps(result))
    return result["ok"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], default=[16, 32, 64, 96, 128])
    parser.add_argument("--preset", choices=["elman", "jordan", "feedforward"], default="elman")
    parser.add_argument("--no-shortcut", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", metavar="RECURRENT_JSON")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    check_philox()
    if args.check:
        sys.exit(0 if check(args) else 1)
    sweep(args)


if __name__ == "__main__":
    main()
