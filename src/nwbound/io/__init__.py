"""Files for practitioners: safe model files and streamed CSV/Parquet tables.

:func:`save_model` / :func:`load_model` write and read a documented ``.npz``
model format (plain arrays + JSON metadata, checksummed, never pickle; see
:mod:`nwbound.io.model_file`). :class:`TableModel` bundles a fitted classifier
with its feature columns and feature scaling. :mod:`nwbound.io.tables` reads
CSV/Parquet in chunks with validation and writes output tables atomically
(needs ``pip install nwbound[tables]``).

Pickle (``pickle``/``joblib``) stays supported for scikit-learn workflows, but
unpickling runs code: use it for trusted files only.
"""

from .model_file import (
    FORMAT_NAME,
    FORMAT_VERSION,
    FeatureScaler,
    ModelFileError,
    TableModel,
    load_model,
    save_model,
)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FeatureScaler",
    "ModelFileError",
    "TableModel",
    "load_model",
    "save_model",
]
