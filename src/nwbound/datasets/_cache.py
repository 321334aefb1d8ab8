"""Small helpers for on-disk caches of derived arrays.

A cache file is written atomically (temporary file in the same directory, then
``os.replace``), so a reader never sees a half-written file; a file that cannot be
read back is reported with a warning and treated as absent, so the caller rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_savez", "load_npz", "sha256_file", "settings_hash", "verify_checksums"]

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Return the hex SHA-256 digest of a file, read in 1 MiB chunks.

    Parameters
    ----------
    path : path-like
        File to hash.

    Returns
    -------
    str
        64 hexadecimal characters.

    Examples
    --------
    >>> import os, tempfile
    >>> from nwbound.datasets._cache import sha256_file
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "f.bin")
    ...     with open(path, "wb") as fh:
    ...         _ = fh.write(b"abc")
    ...     sha256_file(path)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


#: Checksum files a data folder may hold (``sha256sum`` format: digest, space(s), path relative
#: to the checksum file's folder), e.g. ``gtsrb/CHECKSUMS.sha256`` and PhysioNet's ``SHA256SUMS.txt``.
CHECKSUM_FILES = ("CHECKSUMS.sha256", "SHA256SUMS.txt")

# (path, size, mtime_ns) -> digest of the files already verified by this process: a second load
# does not hash them again.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def _checksum_listing(folder: Path) -> tuple[Path, dict[str, str]] | None:
    """The checksum file of ``folder`` (or of its parent) and its ``{relative path: digest}``."""
    for where in (folder, folder.parent):
        for name in CHECKSUM_FILES:
            path = where / name
            if path.is_file():
                listing = {}
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    parts = line.strip().split(maxsplit=1)
                    if len(parts) == 2 and len(parts[0]) == 64:
                        listing[os.path.normpath(parts[1].lstrip("*"))] = parts[0].lower()
                return path, listing
    return None


def verify_checksums(
    folder: str | os.PathLike[str],
    files: Iterable[str | os.PathLike[str]],
    digests: Iterable[str] | None = None,
) -> int:
    """Check data files against the checksum file of their data folder, where there is one.

    The checksum file (one of :data:`CHECKSUM_FILES`, in ``folder`` or its parent) lists
    ``digest  path`` lines; each of ``files`` that it lists must have that SHA-256. Files it
    does not list, and folders without one, are not checked. A file verified once is not
    hashed again by the same process while its size and modification time are unchanged.

    Parameters
    ----------
    folder : path-like
        The data folder the loader was given.
    files : iterable of path-like
        The files the loader reads.
    digests : iterable of str, optional
        Their SHA-256, when the caller has them already (e.g. for a cache key).

    Returns
    -------
    int
        How many files were checked against a listed digest.

    Raises
    ------
    ValueError
        A file's SHA-256 differs from the listed one; the message names the file and the
        checksum file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from nwbound.datasets._cache import verify_checksums
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data = Path(tmp, "a.bin")
    ...     _ = data.write_bytes(b"abc")
    ...     listed = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  ./a.bin\\n"
    ...     _ = Path(tmp, "CHECKSUMS.sha256").write_text(listed)
    ...     print(verify_checksums(tmp, [data]))
    ...     _ = data.write_bytes(b"abd")
    ...     try:
    ...         verify_checksums(tmp, [data])
    ...     except ValueError as exc:
    ...         print(str(exc).replace(tmp, "DIR")[:60])
    1
    DIR/a.bin does not match its SHA-256 in DIR/CHECKSUMS.sha256
    """
    found = _checksum_listing(Path(folder).expanduser())
    if found is None:
        return 0
    listing_path, listing = found
    root = listing_path.parent.resolve()
    given = None if digests is None else list(digests)
    checked = 0
    for i, file in enumerate(files):
        path = Path(file)
        if not path.is_file():  # the loader says which file is missing, and how to get it
            continue
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        expected = listing.get(os.path.normpath(os.path.relpath(key[0], root)))
        if expected is None:
            continue
        checked += 1
        if _VERIFIED.get(key) == expected:
            continue
        actual = given[i] if given is not None else sha256_file(path)
        if actual != expected:
            raise ValueError(
                f"{path} does not match its SHA-256 in {listing_path} (listed {expected[:16]}…, the file has "
                f"{actual[:16]}…): it was changed or damaged after the data were copied. Restore it from the "
                "source named in the data folder's manifest."
            )
        _VERIFIED[key] = expected
    return checked


def settings_hash(settings: Mapping[str, Any]) -> str:
    """Return a stable hex SHA-256 of a JSON-serialisable settings mapping.

    Keys are sorted so that the digest does not depend on insertion order.

    Parameters
    ----------
    settings : mapping
        JSON-serialisable values (str, int, float, bool, None, lists, dicts).

    Returns
    -------
    str
        64 hexadecimal characters.

    Examples
    --------
    >>> from nwbound.datasets._cache import settings_hash
    >>> settings_hash({"b": 1, "a": 2}) == settings_hash({"a": 2, "b": 1})
    True
    >>> len(settings_hash({"a": 1}))
    64
    """
    blob = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def atomic_savez(
    path: str | os.PathLike[str],
    arrays: Mapping[str, np.ndarray],
    *,
    compressed: bool = True,
) -> Path:
    """Write ``arrays`` to an ``.npz`` file atomically.

    The data go to a temporary file in the target directory first, which is then
    moved over ``path`` with :func:`os.replace` (atomic on POSIX and Windows), so an
    interrupted write never leaves a partial file under the final name.

    Parameters
    ----------
    path : path-like
        Destination file; its parent directory is created if needed.
    arrays : mapping of str to ndarray
        Arrays to store (no object arrays: the file must load with
        ``allow_pickle=False``).
    compressed : bool, default True
        Use :func:`numpy.savez_compressed` rather than :func:`numpy.savez`.

    Returns
    -------
    pathlib.Path
        The final path.

    Raises
    ------
    OSError
        If the directory cannot be created or the file cannot be written (the
        temporary file is removed first).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from nwbound.datasets._cache import atomic_savez, load_npz
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = atomic_savez(os.path.join(tmp, "sub", "cache.npz"), {"x": np.arange(3)})
    ...     path.name, load_npz(path)["x"].tolist()
    ('cache.npz', [0, 1, 2])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compressed else np.savez)(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a cache is not secret
        os.replace(tmp, path)
    except BaseException:
        # Never leave the temporary file behind, whatever interrupted us.
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def load_npz(
    path: str | os.PathLike[str], required: Iterable[str] = ()
) -> dict[str, np.ndarray] | None:
    """Load an ``.npz`` cache file, or return ``None`` if it is absent or unusable.

    A file that exists but cannot be read (truncated, corrupt, missing one of the
    ``required`` arrays) triggers a :class:`UserWarning` and ``None``, so the caller
    rebuilds the cache rather than failing or using bad data.

    Parameters
    ----------
    path : path-like
        Cache file.
    required : iterable of str, optional
        Names of arrays that must be present.

    Returns
    -------
    dict of str to ndarray or None
        All arrays of the file, fully loaded into memory.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from nwbound.datasets._cache import atomic_savez, load_npz
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = atomic_savez(os.path.join(tmp, "cache.npz"), {"x": np.arange(3)})
    ...     load_npz(path, required=["x"])["x"].tolist(), load_npz(os.path.join(tmp, "absent.npz"))
    ([0, 1, 2], None)
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {k: npz[k] for k in npz.files}
    except Exception as exc:  # noqa: BLE001 - any failure (zlib, zip, CRC) means: rebuild
        warnings.warn(
            f"ignoring unreadable cache file {path} ({type(exc).__name__}: {exc}); "
            "it will be rebuilt",
            UserWarning,
            stacklevel=3,
        )
        return None
    missing = [k for k in required if k not in data]
    if missing:
        warnings.warn(
            f"ignoring cache file {path}: arrays {missing} are missing; it will be rebuilt",
            UserWarning,
            stacklevel=3,
        )
        return None
    return data
