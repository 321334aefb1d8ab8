"""How these format-1 model files were made (nwbound at commit d6115f5, run from the repository root).

Kept for the record; the tests regenerate the same data with `data()` and compare
the loaded models with fresh fits. Do not rerun it with a newer nwbound (it would
write the current format)."""
import numpy as np
from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.io import TableModel, save_model

def data():
    rng = np.random.default_rng(20261126)
    X = rng.uniform(-2.0, 2.0, size=(60, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int) + (X[:, 1] > 1.0)
    w = rng.uniform(0.5, 2.0, size=60)
    return X, y, w


def main() -> None:
    """Write the fixtures (run by hand with the format-1 code only; never on import)."""
    X, y, w = data()
    out = "tests/data/model_files_v1/"
    save_model(NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5).fit(X, y, sample_weight=w), out + "regular.npz", overwrite=True)
    save_model(NadarayaWatsonClassifier(metric=None, bandwidth="auto", n_neighbors=7, lipschitz=0.5, algorithm="kd_tree").fit(X, y), out + "localized_auto.npz", overwrite=True)
    save_model(DyadicClassifier(metric=None, resolution=3, lipschitz=0.5).fit(X, np.array(["a", "b", "c"])[y], sample_weight=w), out + "dyadic.npz", overwrite=True)
    save_model(TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.3), X, y, features=["f0", "f1", "f2"], scale="minmax", lipschitz=0.5, target="label"), out + "table_minmax.npz", overwrite=True)


if __name__ == "__main__":
    main()
