"""Loader for a subset of classes of the German Traffic Sign Recognition Benchmark.

Labels always come from the data's own annotations — the class folder name
(``00006`` → 6) for training images and the ``ClassId`` column of
``GT-final_test.csv`` for test images — never from the order in which folders
are found (torchvision's ``GTSRB(split="train")`` renumbers the folders it sees,
which turns classes 6/14 into 0/1 on a subset).

Supported layouts under ``data_dir`` (or under ``data_dir/gtsrb``, the
torchvision root):

* training images: ``GTSRB/Training/000NN/*.ppm`` (torchvision) or
  ``GTSRB/Final_Training/Images/000NN/*.ppm`` (official archive);
* test images: ``GTSRB/Final_Test/Images/*.ppm``;
* test labels: ``GT-final_test.csv`` next to ``GTSRB/`` (torchvision), inside
  ``GTSRB/`` or ``GTSRB/Final_Test/``, or in the test image folder.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .._validation import check_int_range
from ._cache import verify_checksums
from ._common import check_choice, check_directory, check_n_samples

__all__ = ["load_gtsrb_pair", "GTSRB_N_CLASSES"]

GTSRB_N_CLASSES = 43  # class ids 0..42
TEST_CSV_NAME = "GT-final_test.csv"
IMAGE_SUFFIX = ".ppm"

HOW_TO_OBTAIN = (
    "Obtain GTSRB from the benchmark's publishers (INI, Ruhr-Universitaet Bochum): the training "
    "archive (GTSRB/Final_Training/Images/000NN/*.ppm), the test images "
    "(GTSRB/Final_Test/Images/*.ppm) and the test labels GT-final_test.csv (a separate archive; "
    "the GT-final_test.test.csv shipped with the images has no ClassId column). torchvision's "
    "GTSRB layout (gtsrb/GTSRB/Training/000NN, gtsrb/GT-final_test.csv) is accepted as well. "
    "nwbound never downloads data on its own."
)


def _first_dir(candidates: list[Path]) -> Path | None:
    return next((p for p in candidates if p.is_dir()), None)


def _resolve_base(data_dir: Path) -> Path:
    """The directory that holds ``GTSRB/`` (``data_dir`` itself or its ``gtsrb/`` child)."""
    for base in (data_dir, data_dir / "gtsrb"):
        if (base / "GTSRB").is_dir():
            return base
    # Allow pointing directly at the ``GTSRB`` folder as well.
    if (data_dir / "Final_Test").is_dir() or (data_dir / "Training").is_dir() or (data_dir / "Final_Training").is_dir():
        return data_dir.parent if data_dir.name == "GTSRB" else data_dir
    raise FileNotFoundError(
        f"No GTSRB folder found under {str(data_dir)!r} (looked for 'GTSRB/' and 'gtsrb/GTSRB/'). {HOW_TO_OBTAIN}"
    )


def _gtsrb_roots(base: Path) -> list[Path]:
    return [base / "GTSRB", base]


def _check_classes(classes: Any) -> tuple[int, ...]:
    try:
        values = tuple(classes)
    except TypeError:
        raise TypeError(f"classes must be a sequence of GTSRB class ids, got {classes!r}.") from None
    if not values:
        raise ValueError("classes must name at least one GTSRB class id.")
    out = []
    for c in values:
        out.append(check_int_range(c, "every GTSRB class id in `classes`", 0, GTSRB_N_CLASSES - 1,
                                   hint=f"(classes={classes!r})"))
    if len(set(out)) != len(out):
        raise ValueError(f"classes must not repeat a class id, got {classes!r}.")
    return tuple(out)


def _train_files(base: Path, classes: tuple[int, ...]) -> tuple[list[Path], list[int]]:
    roots = _gtsrb_roots(base)
    train_dir = _first_dir(
        [r / "Training" for r in roots] + [r / "Final_Training" / "Images" for r in roots]
    )
    if train_dir is None:
        raise FileNotFoundError(
            f"GTSRB training folder not found under {str(base)!r} (expected 'GTSRB/Training/' or "
            f"'GTSRB/Final_Training/Images/'). {HOW_TO_OBTAIN}"
        )
    paths: list[Path] = []
    labels: list[int] = []
    for c in classes:
        class_dir = train_dir / f"{c:05d}"
        if not class_dir.is_dir():
            present = sorted(p.name for p in train_dir.iterdir() if p.is_dir())
            raise FileNotFoundError(
                f"GTSRB class {c} has no training folder {str(class_dir)!r}; folders present: {present}."
            )
        files = sorted(p for p in class_dir.iterdir() if p.suffix.lower() == IMAGE_SUFFIX and p.is_file())
        if not files:
            raise FileNotFoundError(f"GTSRB training folder {str(class_dir)!r} holds no {IMAGE_SUFFIX} images.")
        _check_listed(class_dir, c, files)
        paths.extend(files)
        labels.extend([c] * len(files))  # the label is the folder's class id
    return paths, labels


def _check_listed(class_dir: Path, class_id: int, files: list[Path]) -> None:
    """The class folder's images against its own annotation file ``GT-<class>.csv``, where it lists any:
    every listed image present, no image it does not list, every ``ClassId`` the folder's. A deleted,
    added or misfiled image would otherwise change the training set without a word."""
    listing = class_dir / f"GT-{class_id:05d}.csv"
    if not listing.is_file():
        return
    names, ids = _read_test_csv(listing)
    if not names:
        return  # a header alone: nothing to check against
    wrong = sorted({i for i in ids if i != class_id})
    if wrong:
        raise ValueError(f"GTSRB annotation file {str(listing)!r} lists ClassId {wrong} in the folder of class {class_id}.")
    present = {p.name for p in files}
    missing = [n for n in names if n not in present]
    unlisted = sorted(present - set(names))
    if missing or unlisted:
        raise FileNotFoundError(
            f"GTSRB training folder {str(class_dir)!r} does not match its annotation file {listing.name}: "
            + (f"{len(missing)} listed image(s) missing (e.g. {missing[:3]})" if missing else "")
            + ("; " if missing and unlisted else "")
            + (f"{len(unlisted)} image(s) it does not list (e.g. {unlisted[:3]})" if unlisted else "")
            + ". Restore the folder from the dataset archive."
        )


def _read_test_csv(csv_path: Path) -> tuple[list[str], list[int]]:
    with open(csv_path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=";")
        header = next(reader, None)
        if header is None:
            raise ValueError(f"GTSRB annotation file {str(csv_path)!r} is empty.")
        header = [h.strip() for h in header]
        missing = [col for col in ("Filename", "ClassId") if col not in header]
        if missing:
            raise ValueError(
                f"GTSRB annotation file {str(csv_path)!r} lacks column(s) {missing} (header: {header}); "
                "test labels need the official GT-final_test.csv with a ClassId column "
                "(GT-final_test.test.csv has none)."
            )
        i_name, i_class = header.index("Filename"), header.index("ClassId")
        names: list[str] = []
        ids: list[int] = []
        for line_no, row in enumerate(reader, start=2):
            if not row or all(not cell.strip() for cell in row):
                continue
            try:
                names.append(row[i_name].strip())
                ids.append(int(row[i_class]))
            except (IndexError, ValueError):
                raise ValueError(
                    f"GTSRB annotation file {str(csv_path)!r}, line {line_no}: cannot read Filename/ClassId "
                    f"from {row!r}."
                ) from None
    return names, ids


def _test_files(base: Path, classes: tuple[int, ...]) -> tuple[list[Path], list[int]]:
    roots = _gtsrb_roots(base)
    image_dir = _first_dir([r / "Final_Test" / "Images" for r in roots])
    if image_dir is None:
        raise FileNotFoundError(
            f"GTSRB test image folder not found under {str(base)!r} (expected 'GTSRB/Final_Test/Images/'). "
            f"{HOW_TO_OBTAIN}"
        )
    csv_candidates = [base / TEST_CSV_NAME] + [r / TEST_CSV_NAME for r in roots]
    csv_candidates += [r / "Final_Test" / TEST_CSV_NAME for r in roots] + [image_dir / TEST_CSV_NAME]
    csv_path = next((p for p in csv_candidates if p.is_file()), None)
    if csv_path is None:
        raise FileNotFoundError(
            f"GTSRB test label file {TEST_CSV_NAME!r} not found; looked in "
            f"{[str(p.parent) for p in csv_candidates]}. {HOW_TO_OBTAIN}"
        )
    verify_checksums(base, [csv_path])
    names, ids = _read_test_csv(csv_path)
    ids_arr = np.asarray(ids, dtype=np.int64)
    absent = [c for c in classes if not np.any(ids_arr == c)]
    if absent:
        raise ValueError(
            f"GTSRB class id(s) {absent} do not occur in the ClassId column of {str(csv_path)!r} "
            f"(ids present: {sorted(set(ids))})."
        )
    # Class-major order (as for the training set), CSV order within a class.
    order = np.concatenate([np.flatnonzero(ids_arr == c) for c in classes])
    paths = [image_dir / names[i] for i in order]
    labels = ids_arr[order].tolist()
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} GTSRB test image(s) listed in {str(csv_path)!r} are missing, e.g. {missing[:3]}."
        )
    return paths, labels


def _read_images(paths: list[Path], image_size: int, resize: bool) -> np.ndarray:
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError as exc:  # optional dependency
        from ..utils import install_hint

        raise ImportError(
            f"load_gtsrb_pair needs Pillow to read the .ppm images: {install_hint('images')}."
        ) from exc

    out = np.empty((len(paths), image_size, image_size, 3), dtype=np.uint8)
    # One file per iteration is inherent to image I/O; the work per image is done by Pillow/numpy.
    for i, path in enumerate(paths):
        try:
            with Image.open(path) as im:
                if im.size != (image_size, image_size):
                    if not resize:
                        raise ValueError(
                            f"GTSRB image {str(path)!r} is {im.size[0]} x {im.size[1]} pixels, not "
                            f"{image_size} x {image_size}; pass image_size={im.size[0]} if all images have "
                            "that size, or resize=True to resample them."
                        )
                    im = im.convert("RGB").resize((image_size, image_size), Image.Resampling.BILINEAR)
                out[i] = np.asarray(im.convert("RGB"), dtype=np.uint8)
        except (UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"Cannot read GTSRB image {str(path)!r}: {exc}") from exc
    return out


def load_gtsrb_pair(
    data_dir: str | os.PathLike[str],
    *,
    subset: Literal["train", "test"] = "train",
    classes: tuple[int, ...] = (6, 14),
    image_size: int = 32,
    resize: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Load the GTSRB images of a few classes (default: 6 vs 14 = stop sign).

    Parameters
    ----------
    data_dir : str or path-like
        Directory holding ``GTSRB/`` (or ``gtsrb/GTSRB/``); see the module docstring.
    subset : {"train", "test"}, default="train"
        Training images (labels from the class folder names) or test images
        (labels from the ``ClassId`` column of ``GT-final_test.csv``).
    classes : sequence of int, default=(6, 14)
        GTSRB class ids (0-42) to load, in this order.
    image_size : int, default=32
        Expected side length of the (square) images.
    resize : bool, default=False
        If False, an image of another size is an error; if True it is resampled
        (bilinear) to ``image_size x image_size``.

    Returns
    -------
    X : ndarray of float32, shape (n, image_size * image_size * 3)
        RGB pixels / 255 in ``[0, 1]``, flattened in (row, column, channel) order.
    y : ndarray of int64, shape (n,)
        The GTSRB class ids (e.g. 6 and 14, not 0/1).
    paths : ndarray of str, shape (n,)
        The image file of each row (class-major, sorted by file name within a
        class for training, in CSV order for test).

    Raises
    ------
    FileNotFoundError
        Missing directories, class folders, ``GT-final_test.csv`` or listed images.
    ValueError
        Unknown class ids, a CSV without ``ClassId``, unreadable images or images
        of the wrong size (with ``resize=False``).

    Examples
    --------
    A tiny stand-in for the training folders (two 32 x 32 images per class)
    shows the layout; with the real data there are a few thousand images.

    >>> import os, tempfile
    >>> import numpy as np
    >>> from PIL import Image
    >>> from nwbound.datasets import load_gtsrb_pair
    >>> tmp = tempfile.TemporaryDirectory()
    >>> for c in (6, 14):
    ...     folder = os.path.join(tmp.name, "GTSRB", "Final_Training", "Images", f"{c:05d}")
    ...     os.makedirs(folder)
    ...     for i in range(2):
    ...         Image.new("RGB", (32, 32), (255, 0, 0)).save(os.path.join(folder, f"{i:05d}.ppm"))
    >>> X, y, paths = load_gtsrb_pair(tmp.name)
    >>> X.shape, y.tolist(), float(X.max())
    ((4, 3072), [6, 6, 14, 14], 1.0)
    >>> tmp.cleanup()
    """
    check_choice(subset, "subset", ("train", "test"))
    cls = _check_classes(classes)
    image_size = check_n_samples(image_size, "image_size")
    if not isinstance(resize, bool):
        raise TypeError(f"resize must be True or False, got {resize!r}.")
    data_dir = check_directory(data_dir, "GTSRB", HOW_TO_OBTAIN)
    base = _resolve_base(data_dir)
    paths, labels = _train_files(base, cls) if subset == "train" else _test_files(base, cls)
    verify_checksums(base, paths)  # against the data folder's CHECKSUMS.sha256, where it has one
    images = _read_images(paths, image_size, resize)
    X = images.reshape(len(paths), -1).astype(np.float32)
    X /= np.float32(255.0)
    return X, np.asarray(labels, dtype=np.int64), np.asarray([str(p) for p in paths])
