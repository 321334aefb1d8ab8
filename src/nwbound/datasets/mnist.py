"""Loader for the MNIST handwritten digits in the standard IDX format.

Nothing is downloaded: point :func:`load_mnist` at a directory holding the four
official IDX files (plain or gzip-compressed).
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._cache import verify_checksums
from ._common import check_choice, check_directory, check_n_samples, stratified_subsample

__all__ = ["load_mnist", "read_idx_images", "read_idx_labels"]

IMAGES_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension
IMAGE_SIDE = 28
N_CLASSES = 10

_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

HOW_TO_OBTAIN = (
    "Place the official MNIST IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, "
    "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; plain or with a .gz suffix) in this "
    "directory. They are distributed on Yann LeCun's MNIST page and its mirrors; the same data "
    "is available via sklearn.datasets.fetch_openml('mnist_784') (which you would have to "
    "write out as IDX yourself). nwbound never downloads data on its own."
)


def _find_file(data_dir: Path, stem: str) -> Path:
    # Prefer the uncompressed file when both exist: it reads faster.
    for candidate in (data_dir / stem, data_dir / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"MNIST file {stem!r} (or {stem + '.gz'!r}) not found in {str(data_dir)!r}. {HOW_TO_OBTAIN}"
    )


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"MNIST file {str(path)!r} is not a valid (complete) gzip file: {exc}") from exc


def _parse_idx(path: Path, raw: bytes, magic: int, n_dims: int) -> tuple[int, ...]:
    """Check the IDX header of ``raw`` and return its dimensions."""
    header_len = 4 + 4 * n_dims
    kind = "images" if magic == IMAGES_MAGIC else "labels"
    if len(raw) < header_len:
        raise ValueError(
            f"MNIST file {str(path)!r} is truncated: {len(raw)} bytes, shorter than the "
            f"{header_len}-byte IDX {kind} header."
        )
    found = struct.unpack(">i", raw[:4])[0]
    if found != magic:
        raise ValueError(
            f"MNIST file {str(path)!r} has magic number {found}, expected {magic} for IDX {kind} "
            "files; is this the right file (images vs labels), and is it decompressed correctly?"
        )
    dims = struct.unpack(f">{n_dims}i", raw[4:header_len])
    expected = header_len + int(np.prod(dims, dtype=np.int64))
    if len(raw) < expected:
        raise ValueError(
            f"MNIST file {str(path)!r} is truncated: the header announces dimensions {dims} "
            f"({expected} bytes in all) but the file has only {len(raw)} bytes."
        )
    if len(raw) > expected:
        raise ValueError(
            f"MNIST file {str(path)!r} has {len(raw) - expected} unexpected trailing bytes after "
            f"the {expected} bytes announced by its header {dims}."
        )
    return dims


def read_idx_images(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX image file (magic 2051) of 28 x 28 images.

    Parameters
    ----------
    path : str or path-like
        Plain or ``.gz`` file.

    Returns
    -------
    ndarray of uint8, shape (n_images, 28, 28)

    Raises
    ------
    ValueError
        Wrong magic number, image size other than 28 x 28, truncated file or trailing bytes.

    Examples
    --------
    >>> import os, struct, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> labels = os.path.join(tmp.name, "train-labels-idx1-ubyte")
    >>> with open(labels, "wb") as fh:  # header: magic 2049, count; then one byte per label
    ...     _ = fh.write(struct.pack(">ii", 2049, 3) + bytes([7, 0, 7]))
    >>> images = os.path.join(tmp.name, "train-images-idx3-ubyte")
    >>> with open(images, "wb") as fh:  # header: magic 2051, count, rows, columns
    ...     _ = fh.write(struct.pack(">iiii", 2051, 3, 28, 28) + bytes(3 * 28 * 28))
    >>> from nwbound.datasets.mnist import read_idx_images
    >>> read_idx_images(images).shape
    (3, 28, 28)
    >>> tmp.cleanup()
    """
    path = Path(path)
    raw = _read_bytes(path)
    n, rows, cols = _parse_idx(path, raw, IMAGES_MAGIC, 3)
    if (rows, cols) != (IMAGE_SIDE, IMAGE_SIDE):
        raise ValueError(
            f"MNIST file {str(path)!r} holds {rows} x {cols} images; MNIST images are "
            f"{IMAGE_SIDE} x {IMAGE_SIDE}."
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows, cols)


def read_idx_labels(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX label file (magic 2049) of digits 0-9.

    Returns
    -------
    ndarray of uint8, shape (n_labels,)

    Raises
    ------
    ValueError
        Wrong magic number, truncated file, trailing bytes or a label outside 0-9.

    Examples
    --------
    >>> import os, struct, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> labels = os.path.join(tmp.name, "train-labels-idx1-ubyte")
    >>> with open(labels, "wb") as fh:  # header: magic 2049, count; then one byte per label
    ...     _ = fh.write(struct.pack(">ii", 2049, 3) + bytes([7, 0, 7]))
    >>> images = os.path.join(tmp.name, "train-images-idx3-ubyte")
    >>> with open(images, "wb") as fh:  # header: magic 2051, count, rows, columns
    ...     _ = fh.write(struct.pack(">iiii", 2051, 3, 28, 28) + bytes(3 * 28 * 28))
    >>> from nwbound.datasets.mnist import read_idx_labels
    >>> read_idx_labels(labels).tolist()
    [7, 0, 7]
    >>> tmp.cleanup()
    """
    path = Path(path)
    raw = _read_bytes(path)
    (n,) = _parse_idx(path, raw, LABELS_MAGIC, 1)
    labels = np.frombuffer(raw, dtype=np.uint8, offset=8)
    if n and labels.max() >= N_CLASSES:
        raise ValueError(f"MNIST file {str(path)!r} holds label {int(labels.max())}; MNIST labels are 0-9.")
    return labels


def load_mnist(
    data_dir: str | os.PathLike[str],
    *,
    subset: Literal["train", "test"] = "train",
    n_samples: int | None = None,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load MNIST from the official IDX files.

    Parameters
    ----------
    data_dir : str or path-like
        Directory with ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
        ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` (each plain or ``.gz``).
    subset : {"train", "test"}, default="train"
        The 60000 training or the 10000 test images.
    n_samples : int, optional
        If given, return a stratified random subsample of this size (class
        proportions kept, see :func:`nwbound.datasets.stratified_subsample`),
        in the files' order.
    random_state : int, numpy.random.Generator or None
        Seed of the subsample.

    Returns
    -------
    X : ndarray of float32, shape (n, 784)
        Pixels divided by 255 (in ``[0, 1]``), each image flattened row by row.
    y : ndarray of int64, shape (n,)
        Digits 0-9.

    Raises
    ------
    FileNotFoundError
        ``data_dir`` or one of the files is missing (the message says how to get them).
    ValueError
        A file is corrupt (wrong magic number, truncated, wrong image size), image
        and label counts differ, or ``n_samples`` cannot be drawn.

    Examples
    --------
    A tiny stand-in for the official files (3 blank images) shows the layout;
    with the real files ``X`` has shape (60000, 784).

    >>> import os, struct, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> labels = os.path.join(tmp.name, "train-labels-idx1-ubyte")
    >>> with open(labels, "wb") as fh:  # header: magic 2049, count; then one byte per label
    ...     _ = fh.write(struct.pack(">ii", 2049, 3) + bytes([7, 0, 7]))
    >>> images = os.path.join(tmp.name, "train-images-idx3-ubyte")
    >>> with open(images, "wb") as fh:  # header: magic 2051, count, rows, columns
    ...     _ = fh.write(struct.pack(">iiii", 2051, 3, 28, 28) + bytes(3 * 28 * 28))
    >>> from nwbound.datasets import load_mnist
    >>> X, y = load_mnist(tmp.name)
    >>> X.shape, X.dtype, y.tolist()
    ((3, 784), dtype('float32'), [7, 0, 7])
    >>> tmp.cleanup()
    """
    check_choice(subset, "subset", ("train", "test"))
    data_dir = check_directory(data_dir, "MNIST", HOW_TO_OBTAIN)
    image_path = _find_file(data_dir, _FILES[subset][0])
    label_path = _find_file(data_dir, _FILES[subset][1])
    verify_checksums(data_dir, [image_path, label_path])  # where the folder has a checksum file
    images = read_idx_images(image_path)
    labels = read_idx_labels(label_path)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"MNIST image/label count mismatch: {str(image_path)!r} holds {images.shape[0]} images "
            f"but {str(label_path)!r} holds {labels.shape[0]} labels."
        )

    if n_samples is not None:
        n_samples = check_n_samples(n_samples)
        if n_samples > labels.shape[0]:
            raise ValueError(f"n_samples={n_samples} exceeds the {labels.shape[0]} images available.")
        idx = stratified_subsample(labels, n_samples, random_state)
        images, labels = images[idx], labels[idx]

    # Convert after subsampling so only the kept images are materialised as float.
    X = images.reshape(images.shape[0], -1).astype(np.float32)
    X /= np.float32(255.0)
    return X, labels.astype(np.int64)

