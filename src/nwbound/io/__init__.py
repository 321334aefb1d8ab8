"""Files for practitioners: safe model files and streamed CSV/Parquet tables.

:func:`save_model` / :func:`load_model` write and read a documented ``.npz``
model format (plain arrays + JSON metadata, never pickle; the default model's
learned space through skops with an explicit list of trusted types; see
:mod:`nwbound.io.model_file`): the fitted state goes through the estimators'
public ``get_fitted_state``/``set_fitted_state``, and every loaded value is
validated (the unkeyed SHA-256 checksum catches accidents, not forgery).
:class:`TableModel` (:mod:`nwbound.io.pipeline`) bundles a fitted classifier
with its feature columns and feature scaling. :mod:`nwbound.io.tables` reads
CSV/Parquet in chunks with validation and writes output tables atomically
(needs the ``tables`` extra).

Pickle (``pickle``/``joblib``) stays supported for scikit-learn workflows, but
unpickling runs code: use it for trusted files only.
"""

from .model_file import FORMAT_NAME, FORMAT_VERSION, ModelFileError, load_model, save_model
from .pipeline import FeatureScaler, TableModel

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FeatureScaler",
    "ModelFileError",
    "TableModel",
    "load_model",
    "save_model",
]
