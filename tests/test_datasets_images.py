"""Tests for the MNIST (IDX) and GTSRB (PPM + CSV) loaders."""

from __future__ import annotations

import gzip
import hashlib
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from nwbound.datasets import load_gtsrb_pair, load_mnist

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MANIFEST = DATA / "MANIFEST.md"


def _manifest_rows(prefix: str) -> dict[str, list[str]]:
    """Table rows of MANIFEST.md whose first cell is a backquoted path starting with ``prefix``."""
    rows = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|(.*)\|\s*$", line)
        if m and m.group(1).startswith(prefix):
            rows[m.group(1)] = [c.strip().strip("`") for c in m.group(2).split("|")]
    return rows


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# =========================================================================== MNIST

def _idx_images(arr: np.ndarray, magic: int = 2051) -> bytes:
    n, r, c = arr.shape
    return struct.pack(">iiii", magic, n, r, c) + arr.astype(np.uint8).tobytes()


def _idx_labels(lab: np.ndarray, magic: int = 2049) -> bytes:
    return struct.pack(">ii", magic, lab.shape[0]) + lab.astype(np.uint8).tobytes()


def _write(path: Path, payload: bytes, gz: bool) -> None:
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)


def _tiny_mnist(tmp_path: Path, subset: str = "train", n_per_class: int = 3, gz: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(10), n_per_class)
    rng.shuffle(labels)
    images = rng.integers(0, 256, size=(labels.size, 28, 28), dtype=np.uint8)
    stem = "train" if subset == "train" else "t10k"
    _write(tmp_path / f"{stem}-images-idx3-ubyte", _idx_images(images), gz)
    _write(tmp_path / f"{stem}-labels-idx1-ubyte", _idx_labels(labels), gz)
    return images, labels


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("subset", ["train", "test"])
def test_mnist_reads_idx_plain_and_gzip(tmp_path, gz, subset):
    images, labels = _tiny_mnist(tmp_path, subset=subset, gz=gz)
    X, y = load_mnist(tmp_path, subset=subset)
    assert X.dtype == np.float32 and X.shape == (30, 784)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, labels)
    np.testing.assert_allclose(X, images.reshape(30, -1) / 255.0, rtol=1e-6)
    assert X.min() >= 0.0 and X.max() <= 1.0


def test_mnist_missing_directory_says_how_to_obtain(tmp_path):
    with pytest.raises(FileNotFoundError, match="fetch_openml"):
        load_mnist(tmp_path / "nope")


def test_mnist_missing_label_file_is_named(tmp_path):
    images = np.zeros((3, 28, 28), np.uint8)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(_idx_images(images))
    with pytest.raises(FileNotFoundError, match="train-labels-idx1-ubyte"):
        load_mnist(tmp_path)


def test_mnist_wrong_magic(tmp_path):
    _tiny_mnist(tmp_path)
    labels = np.arange(30) % 10
    # A label file written with the images' magic number.
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(_idx_labels(labels, magic=2051))
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte.*magic number 2051, expected 2049"):
        load_mnist(tmp_path)


def test_mnist_truncated_file(tmp_path):
    _tiny_mnist(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.*truncated"):
        load_mnist(tmp_path)
    path.write_bytes(path.read_bytes()[:10])  # shorter than the header
    with pytest.raises(ValueError, match="truncated"):
        load_mnist(tmp_path)


def test_mnist_truncated_gzip(tmp_path):
    _tiny_mnist(tmp_path, gz=True)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-50])
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte\.gz.*gzip"):
        load_mnist(tmp_path)


def test_mnist_trailing_bytes(tmp_path):
    _tiny_mnist(tmp_path)
    path = tmp_path / "train-labels-idx1-ubyte"
    path.write_bytes(path.read_bytes() + b"\x00\x01")
    with pytest.raises(ValueError, match="trailing bytes"):
        load_mnist(tmp_path)


def test_mnist_count_mismatch(tmp_path):
    _tiny_mnist(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(_idx_labels(np.arange(29) % 10))
    with pytest.raises(ValueError, match="30 images.*29 labels"):
        load_mnist(tmp_path)


def test_mnist_wrong_image_size(tmp_path):
    _tiny_mnist(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(_idx_images(np.zeros((30, 27, 28), np.uint8)))
    with pytest.raises(ValueError, match="27 x 28"):
        load_mnist(tmp_path)


def test_mnist_label_out_of_range(tmp_path):
    _tiny_mnist(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(_idx_labels(np.full(30, 11)))
    with pytest.raises(ValueError, match="label 11"):
        load_mnist(tmp_path)


def test_mnist_stratified_subsample(tmp_path):
    images, labels = _tiny_mnist(tmp_path, n_per_class=10)
    X, y = load_mnist(tmp_path, n_samples=50, random_state=0)
    assert X.shape == (50, 784)
    np.testing.assert_array_equal(np.bincount(y, minlength=10), np.full(10, 5))
    # Every returned row is one of the file's images with its own label.
    flat = images.reshape(len(images), -1)
    for xi, yi in zip(X, y):
        match = np.flatnonzero(np.all(flat == np.rint(xi * 255).astype(np.uint8), axis=1))
        assert match.size == 1 and labels[match[0]] == yi
    X2, y2 = load_mnist(tmp_path, n_samples=50, random_state=0)
    np.testing.assert_array_equal(X, X2)
    X3, _ = load_mnist(tmp_path, n_samples=50, random_state=1)
    assert not np.array_equal(X, X3)
    Xall, _ = load_mnist(tmp_path, n_samples=100)
    assert Xall.shape[0] == 100


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"n_samples": 5}, ValueError, "stratified"),
        ({"n_samples": 101}, ValueError, "exceeds"),
        ({"n_samples": 0}, ValueError, "n_samples"),
        ({"n_samples": 2.0}, TypeError, "n_samples"),
        ({"subset": "val"}, ValueError, "subset"),
    ],
)
def test_mnist_bad_arguments(tmp_path, kwargs, exc, match):
    _tiny_mnist(tmp_path, n_per_class=10)
    with pytest.raises(exc, match=match):
        load_mnist(tmp_path, **kwargs)


mnist_dir = DATA / "mnist"
needs_mnist = pytest.mark.skipif(not (mnist_dir / "t10k-labels-idx1-ubyte.gz").is_file(), reason="shared MNIST data absent")


@pytest.mark.data
@pytest.mark.slow
@needs_mnist
def test_real_mnist_shapes_and_label_counts():
    # Label counts as stated in MANIFEST.md (facts about the official files).
    expected = {
        "train": (60000, [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]),
        "test": (10000, [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]),
    }
    for subset, (n, counts) in expected.items():
        X, y = load_mnist(mnist_dir, subset=subset)
        assert X.shape == (n, 784) and X.dtype == np.float32
        assert X.min() == 0.0 and X.max() == 1.0
        np.testing.assert_array_equal(np.bincount(y, minlength=10), counts)


@pytest.mark.data
@pytest.mark.slow
@needs_mnist
def test_real_mnist_checksums_match_manifest():
    rows = _manifest_rows("mnist/")
    assert len(rows) == 4
    for name, cells in rows.items():
        size, sha_gz, sha_raw = int(cells[0]), cells[1], cells[2]
        payload = (DATA / name).read_bytes()
        assert len(payload) == size, name
        assert _sha256(payload) == sha_gz, name
        assert _sha256(gzip.decompress(payload)) == sha_raw, name


@pytest.mark.data
@pytest.mark.slow
@needs_mnist
def test_real_mnist_test_subsample():
    X, y = load_mnist(mnist_dir, subset="test", n_samples=1000, random_state=0)
    assert X.shape == (1000, 784)
    # Stratified: each class within one sample of its 10000-image proportion.
    prop = np.array([980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]) / 10
    assert np.all(np.abs(np.bincount(y, minlength=10) - prop) <= 1)


# =========================================================================== GTSRB

COLORS = {6: (200, 10, 10), 14: (10, 10, 200), 3: (10, 200, 10)}


def _ppm(path: Path, color, size=(32, 32)) -> None:
    from PIL import Image

    Image.new("RGB", size, color).save(path, format="PPM")


def _tiny_gtsrb(root: Path, *, official: bool = False, csv: bool = True) -> dict[str, int]:
    """Write a small GTSRB tree; returns the test file → class mapping."""
    base = root / "gtsrb"
    train = base / "GTSRB" / ("Final_Training/Images" if official else "Training")
    for cid, n in ((6, 3), (14, 5), (3, 2)):
        d = train / f"{cid:05d}"
        d.mkdir(parents=True)
        for k in range(n):
            _ppm(d / f"00000_{k:05d}.ppm", COLORS[cid])
        (d / f"GT-{cid:05d}.csv").write_text("Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId\n" + "".join(
            f"00000_{k:05d}.ppm;32;32;5;5;27;27;{cid}\n" for k in range(n)))
    test_dir = base / "GTSRB" / "Final_Test" / "Images"
    test_dir.mkdir(parents=True)
    # File-name order deliberately unrelated to class order.
    mapping = {"00000.ppm": 14, "00001.ppm": 6, "00002.ppm": 3, "00003.ppm": 14, "00004.ppm": 6, "00005.ppm": 14}
    for name, cid in mapping.items():
        _ppm(test_dir / name, COLORS[cid])
    if csv:
        lines = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
        lines += [f"{name};40;41;5;5;35;36;{cid}" for name, cid in mapping.items()]
        target = test_dir.parent / "GT-final_test.csv" if official else base / "GT-final_test.csv"
        target.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return mapping


def _colour_class(X: np.ndarray) -> np.ndarray:
    """Class implied by each image's (uniform) colour."""
    first = np.rint(X[:, :3] * 255).astype(int)
    lookup = {c: k for k, c in COLORS.items()}
    return np.array([lookup[tuple(p)] for p in first])


@pytest.mark.parametrize("official", [False, True])
def test_gtsrb_train_labels_from_folder_names(tmp_path, official):
    _tiny_gtsrb(tmp_path, official=official)
    X, y, paths = load_gtsrb_pair(tmp_path)
    assert X.shape == (8, 32 * 32 * 3) and X.dtype == np.float32
    assert y.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(y, minlength=15)[[6, 14]], [3, 5])
    np.testing.assert_array_equal(_colour_class(X), y)
    assert all(Path(p).parent.name == f"{c:05d}" for p, c in zip(paths, y))
    assert X.min() >= 0.0 and X.max() <= 1.0
    # Requested order is kept.
    _, y2, _ = load_gtsrb_pair(tmp_path, classes=(14, 6))
    assert y2[0] == 14 and y2[-1] == 6


@pytest.mark.parametrize("official", [False, True])
def test_gtsrb_test_labels_from_csv(tmp_path, official):
    mapping = _tiny_gtsrb(tmp_path, official=official)
    X, y, paths = load_gtsrb_pair(tmp_path, subset="test")
    assert X.shape == (5, 3072)
    np.testing.assert_array_equal(y, [mapping[Path(p).name] for p in paths])
    np.testing.assert_array_equal(_colour_class(X), y)
    assert sorted(y.tolist()) == [6, 6, 14, 14, 14]


@pytest.mark.parametrize("change, match", [
    ("delete", r"1 listed image\(s\) missing \(e.g. \['00000_00001.ppm'\]\)"),
    ("add", r"1 image\(s\) it does not list \(e.g. \['00000_00009.ppm'\]\)"),
    ("misfile", r"lists ClassId \[14\] in the folder of class 6"),
])
def test_gtsrb_training_folder_must_match_its_annotation_file(tmp_path, change, match):
    _tiny_gtsrb(tmp_path)
    folder = tmp_path / "gtsrb" / "GTSRB" / "Training" / "00006"
    if change == "delete":  # was silently 7 training images instead of 8
        (folder / "00000_00001.ppm").unlink()
    elif change == "add":
        _ppm(folder / "00000_00009.ppm", COLORS[14])
    else:
        listing = folder / "GT-00006.csv"
        listing.write_text(listing.read_text().replace(";6\n", ";14\n", 1))
    with pytest.raises((FileNotFoundError, ValueError), match=match):
        load_gtsrb_pair(tmp_path)


def test_gtsrb_accepts_inner_directory(tmp_path):
    _tiny_gtsrb(tmp_path)
    _, y, _ = load_gtsrb_pair(tmp_path / "gtsrb", subset="test")
    assert y.size == 5


def test_gtsrb_wrong_image_size_and_resize(tmp_path):
    _tiny_gtsrb(tmp_path)
    odd = tmp_path / "gtsrb" / "GTSRB" / "Training" / "00006" / "00000_00001.ppm"
    _ppm(odd, COLORS[6], size=(30, 28))
    with pytest.raises(ValueError, match=r"00000_00001\.ppm.*30 x 28"):
        load_gtsrb_pair(tmp_path)
    X, y, _ = load_gtsrb_pair(tmp_path, resize=True)
    assert X.shape == (8, 3072)
    np.testing.assert_array_equal(_colour_class(X), y)
    X16, _, _ = load_gtsrb_pair(tmp_path, image_size=16, resize=True)
    assert X16.shape == (8, 16 * 16 * 3)


def test_gtsrb_missing_csv(tmp_path):
    _tiny_gtsrb(tmp_path, csv=False)
    with pytest.raises(FileNotFoundError, match="GT-final_test.csv"):
        load_gtsrb_pair(tmp_path, subset="test")


def test_gtsrb_csv_without_classid(tmp_path):
    _tiny_gtsrb(tmp_path, csv=False)
    # The GT-final_test.test.csv shipped with the official images has no ClassId column.
    (tmp_path / "gtsrb" / "GT-final_test.csv").write_text("Filename;Width;Height\r\n00000.ppm;40;41\r\n")
    with pytest.raises(ValueError, match="ClassId"):
        load_gtsrb_pair(tmp_path, subset="test")


def test_gtsrb_missing_test_image(tmp_path):
    _tiny_gtsrb(tmp_path)
    (tmp_path / "gtsrb" / "GTSRB" / "Final_Test" / "Images" / "00004.ppm").unlink()
    with pytest.raises(FileNotFoundError, match="00004.ppm"):
        load_gtsrb_pair(tmp_path, subset="test")


def test_gtsrb_unreadable_image(tmp_path):
    _tiny_gtsrb(tmp_path)
    (tmp_path / "gtsrb" / "GTSRB" / "Training" / "00014" / "00000_00002.ppm").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="00000_00002.ppm"):
        load_gtsrb_pair(tmp_path)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"classes": (6, 99)}, ValueError, r"GTSRB class id .* <= 42, got 99"),
        ({"classes": (6, -1)}, ValueError, r"GTSRB class id .* >= 0"),
        ({"classes": (6, 6)}, ValueError, "repeat"),
        ({"classes": ()}, ValueError, "at least one"),
        ({"classes": (6, "14")}, TypeError, "integer"),
        ({"classes": (6, 5)}, FileNotFoundError, "class 5"),
        ({"classes": (6, 5), "subset": "test"}, ValueError, r"\[5\]"),
        ({"subset": "validation"}, ValueError, "subset"),
        ({"image_size": 0}, ValueError, "image_size"),
        ({"resize": "yes"}, TypeError, "resize"),
    ],
)
def test_gtsrb_bad_arguments(tmp_path, kwargs, exc, match):
    _tiny_gtsrb(tmp_path)
    with pytest.raises(exc, match=match):
        load_gtsrb_pair(tmp_path, **kwargs)


def test_gtsrb_missing_directories(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_gtsrb_pair(tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="No GTSRB folder"):
        load_gtsrb_pair(tmp_path)
    (tmp_path / "GTSRB" / "Training").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="test image folder"):
        load_gtsrb_pair(tmp_path, subset="test")


gtsrb_dir = DATA / "gtsrb"
needs_gtsrb = pytest.mark.skipif(not (gtsrb_dir / "gtsrb" / "GT-final_test.csv").is_file(), reason="shared GTSRB data absent")


@pytest.mark.data
@pytest.mark.slow
@needs_gtsrb
def test_real_gtsrb_counts_match_manifest():
    # MANIFEST: train 420 (class 6) + 780 (class 14); test 150 + 270; all 32 x 32.
    for subset, counts in (("train", (420, 780)), ("test", (150, 270))):
        X, y, paths = load_gtsrb_pair(gtsrb_dir, subset=subset)
        assert X.shape == (sum(counts), 32 * 32 * 3)
        assert X.min() >= 0.0 and X.max() <= 1.0
        np.testing.assert_array_equal([np.sum(y == 6), np.sum(y == 14)], counts)
        assert len(set(paths.tolist())) == len(paths)


@pytest.mark.data
@pytest.mark.slow
@needs_gtsrb
def test_real_gtsrb_csv_checksums_match_manifest():
    rows = _manifest_rows("gtsrb/")
    csv_rows = {k: v for k, v in rows.items() if k.endswith(".csv")}
    assert len(csv_rows) == 4
    for name, (size, sha) in csv_rows.items():
        payload = (DATA / name).read_bytes()
        assert len(payload) == int(size) and _sha256(payload) == sha, name


# ---------------------------------------------------------------------------
# the one stratified subsampler (nwbound.datasets.stratified_subsample)
# ---------------------------------------------------------------------------


def _largest_remainder_counts(counts: list[int], n: int) -> list[int]:
    """Independent restatement: floor of each quota (at least 1), then ±1 by remainder order."""
    total = sum(counts)
    quotas = [c * n / total for c in counts]
    take = [max(int(q // 1), 1) for q in quotas]
    order = sorted(range(len(counts)), key=lambda i: -(quotas[i] - int(quotas[i] // 1)))
    i = 0
    while sum(take) != n:
        c = order[i % len(counts)]
        if sum(take) < n and take[c] < counts[c]:
            take[c] += 1
        elif sum(take) > n and take[c] > 1:
            take[c] -= 1
        i += 1
    return take


@pytest.mark.parametrize("n", [4, 10, 57, 199])
def test_stratified_subsample_counts_and_seed(n):
    from nwbound.datasets import stratified_subsample

    y = np.array(["b"] * 120 + ["a"] * 70 + ["c"] * 9 + ["d"] * 1)
    idx = stratified_subsample(y, n, random_state=5)
    assert idx.dtype.kind == "i" and idx.shape == (n,) and np.all(np.diff(idx) > 0)
    labels, counts = np.unique(y, return_counts=True)
    got = [int(np.sum(y[idx] == c)) for c in labels]
    assert got == _largest_remainder_counts(counts.tolist(), n)
    np.testing.assert_array_equal(idx, stratified_subsample(y, n, random_state=5))
    gen = np.random.default_rng(5)  # a Generator gives the same draw as its seed
    np.testing.assert_array_equal(idx, stratified_subsample(y, n, random_state=gen))
    assert not np.array_equal(idx, stratified_subsample(y, n, random_state=6)) or n == 199


def test_stratified_subsample_edges():
    from nwbound.datasets import stratified_subsample

    y = np.repeat([0, 1, 2], 5)
    np.testing.assert_array_equal(stratified_subsample(y, 15), np.arange(15))
    np.testing.assert_array_equal(stratified_subsample(y, 99), np.arange(15))
    with pytest.raises(ValueError, match="3 classes"):
        stratified_subsample(y, 2)
    with pytest.raises(ValueError, match="n_samples"):
        stratified_subsample(y, 0)
    with pytest.raises(TypeError, match="n_samples"):
        stratified_subsample(y, 2.5)
    with pytest.raises(ValueError, match="one-dimensional"):
        stratified_subsample(y.reshape(3, 5), 4)
