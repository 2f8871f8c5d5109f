#!/usr/bin/env python3
"""How digit-like a grid of generated samples is, judged by an independent classifier:
scikit-learn's MLPClassifier(500) trained on MNIST pixels (3.97% test error on the 10k
subset), never on anything the DBN produced. Reads `deepbelief sample`'s PNG (28×28 tiles,
a one-pixel black frame around each), prints JSON: the share of samples labelled with
probability >= --confidence, the classes present among those, and the class histogram.

usage: sample_quality.py SAMPLES.png --images TRAIN-IMAGES.gz --labels TRAIN-LABELS.gz
"""
import argparse
import json

import numpy as np
from PIL import Image
from sklearn.neural_network import MLPClassifier

from idx import load_images, load_labels

TILE = 28


def tiles(path):
    grid = np.asarray(Image.open(path).convert("L"), dtype=np.float32) / 255.0
    rows, cols = (grid.shape[0] - 1) // (TILE + 1), (grid.shape[1] - 1) // (TILE + 1)
    out = []
    for r in range(rows):
        for c in range(cols):
            y, x = 1 + r * (TILE + 1), 1 + c * (TILE + 1)
            out.append(grid[y:y + TILE, x:x + TILE].reshape(-1))
    return np.array(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples")
    parser.add_argument("--images", required=True)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--confidence", type=float, default=0.9)
    args = parser.parse_args()

    classifier = MLPClassifier(hidden_layer_sizes=(500,), max_iter=50, random_state=0)
    classifier.fit(load_images(args.images), load_labels(args.labels))
    samples = tiles(args.samples)
    # An all-black tile is no digit, however the classifier labels it.
    blank = samples.max(axis=1) < 0.2
    probabilities = classifier.predict_proba(samples)
    labels, best = probabilities.argmax(axis=1), probabilities.max(axis=1)
    confident = (best >= args.confidence) & ~blank
    print(json.dumps({
        "samples": len(samples),
        "blank": int(blank.sum()),
        "confident_share": round(float(confident.mean()), 3),
        "classes_confident": sorted({int(k) for k in labels[confident]}),
        "histogram": [int((labels[~blank] == k).sum()) for k in range(10)],
    }))


if __name__ == "__main__":
    main()
