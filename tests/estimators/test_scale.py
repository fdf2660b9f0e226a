"""Units of the data: every method whose model is scale-invariant gives the same partition
on ``X * c`` as on ``X``, for ``c`` from 1e-6 to 1e6.

Scale-invariant here: DP-means with ``lam`` from ``lam_k`` (the k-th farthest distance scales with the
data), TVClust (``standardize=True``), the semi-supervised GMM (``reg_covar`` relative to the data's
variance), CEC-IB and C3L (affine-invariant costs; C3L's hyperplane from an SVM on standardised
features), CCIB's gaussian model (``variance`` relative to the data's variance) and SMIC (kernel
widths from nearest-neighbour distances). RDP-means' default link weights (``xi0`` relative to the
data's variance) are checked in ``test_scale_invariance.py``. Not invariant by design, hence not tested:
an explicit ``lam`` (DP-means' penalty is in the data's squared units).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from ppclust._registry import METHODS

SCALES = (1e-6, 1e-3, 1e3, 1e6)


def _data():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    truth = np.repeat(np.arange(3), 20)
    X = centres[truth] + rng.normal(size=(60, 2)) * np.array([1.0, 0.7])
    y = np.where(rng.random(60) < 0.3, truth, -1)
    return X, truth, y


# method -> (constructor parameters, how fit gets side information)
CASES = {
    "dpmeans": (dict(lam_k=3, n_init=2, random_state=0), "none"),
    "tvclust": (dict(n_draws=20, n_warmup=20, n_chains=1, k_max=8, random_state=0), "labels"),
    "ssgmm": (dict(n_clusters=3, n_init=2, random_state=0), "labels"),
    "bayesian-ssgmm": (dict(n_clusters=3, n_draws=10, n_warmup=10, n_chains=1, random_state=0), "labels"),
    "cecib": (dict(n_clusters=3, n_init=2, random_state=0), "labels"),
    "c3l": (dict(n_clusters=3, n_init=2, init="k-means++", random_state=0), "two"),
    "ccib": (dict(n_clusters=3, n_init=2, feature_model="gaussian", random_state=0), "none"),
    "smic": (dict(n_clusters=3, n_neighbors=5, gamma=1.0, eta=0.0, random_state=0), "labels"),
}


def test_cases_cover_every_scale_invariant_method():
    assert set(CASES) == set(METHODS) - {"rdpmeans"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_partition_at_every_scale(name):
    X, truth, y = _data()
    params, side = CASES[name]
    cls = METHODS[name].load()
    if side == "labels":
        kw = {"y": y}
    elif side == "two":
        kw = {"y": np.where(y >= 0, (y > 0).astype(int), -1)}
    else:
        kw = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(**params).fit(X, **kw)
        ref = est.labels_
        assert ref.dtype == np.int64 and ref.min() >= 0
        assert len(np.unique(ref)) >= 2  # a real clustering, not everything in one cluster
        for c in SCALES:
            scaled = cls(**params).fit(X * c, **kw)
            lab = scaled.labels_
            assert adjusted_rand_score(ref, lab) == 1.0, (name, c, np.bincount(lab))
            # the relative regularisers, in X's units, scale with the data's variance
            for attr, rel in (("reg_covar_", "reg_covar"), ("variance_", "variance")):
                if hasattr(scaled, attr) and rel in scaled.get_params():
                    s2 = float(np.mean(np.var(X * c, axis=0)))
                    np.testing.assert_allclose(getattr(scaled, attr), getattr(scaled, rel) * s2, rtol=1e-12)
                    np.testing.assert_allclose(getattr(scaled, attr), getattr(est, attr) * c * c, rtol=1e-9)
