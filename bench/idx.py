"""Reads MNIST-style IDX image files (raw or gzip) into a float32 array in [0, 1]."""
import gzip

import numpy as np


def load_images(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic, count, rows, cols = (int.from_bytes(raw[i : i + 4], "big") for i in range(0, 16, 4))
    if magic != 2051:
        raise ValueError(f"{path}: not an IDX image file (magic {magic})")
    pixels = np.frombuffer(raw, dtype=np.uint8, offset=16, count=count * rows * cols)
    return pixels.reshape(count, rows * cols).astype(np.float32) / np.float32(255.0)


def blas_threads():
    """Threads of the BLAS NumPy calls, as threadpoolctl reports them (None if unknown)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    counts = [pool["num_threads"] for pool in threadpool_info() if pool.get("user_api") == "blas"]
    return max(counts) if counts else None


def load_labels(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic, count = (int.from_bytes(raw[i : i + 4], "big") for i in range(0, 8, 4))
    if magic != 2049:
        raise ValueError(f"{path}: not an IDX label file (magic {magic})")
    return np.frombuffer(raw, dtype=np.uint8, offset=8, count=count).astype(np.int64)
