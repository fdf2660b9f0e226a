"""One exception hierarchy, soft links that combine, and messages that say what went wrong."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import ppclust
from ppclust import errors
from ppclust.errors import ConflictingLinksError, KMaxExhaustedError, NonFiniteError, PPClustError
from ppclust.estimators._base import LINK_MODELS, link_side_info
from ppclust.sideinfo import SideInfo


def _modules():
    for info in pkgutil.walk_packages(ppclust.__path__, "ppclust."):
        if info.name.endswith("__main__"):
            continue
        yield importlib.import_module(info.name)


def test_every_ppclust_exception_class_derives_from_ppclusterror():
    """A new custom exception anywhere in the package must join the hierarchy (the CLI catches one)."""
    found = {}
    for mod in _modules():
        for name, obj in vars(mod).items():
            mine = inspect.isclass(obj) and obj.__module__.startswith("ppclust")
            if mine and issubclass(obj, BaseException):
                found[f"{obj.__module__}.{name}"] = obj
    assert "ppclust._input_files.CLIError" in found and "ppclust.errors.KMaxExhaustedError" in found
    # warnings are not raised: ppclust's derive from UserWarning (so filters can single them out)
    warns = {k for k, c in found.items() if issubclass(c, Warning)}
    assert {"ppclust.errors.AllLabelledWarning", "ppclust.errors.DegenerateDataWarning"} <= warns
    assert [k for k in warns if not issubclass(found[k], UserWarning)] == []
    assert [k for k, c in found.items() if k not in warns and not issubclass(c, PPClustError)] == []


def test_old_import_paths_and_builtin_bases_are_kept():
    from ppclust.inference import gibbs

    assert gibbs.KMaxExhaustedError is errors.KMaxExhaustedError
    assert issubclass(KMaxExhaustedError, RuntimeError) and issubclass(KMaxExhaustedError, ValueError)
    assert issubclass(NonFiniteError, FloatingPointError) and issubclass(NonFiniteError, ValueError)
    assert issubclass(ConflictingLinksError, ValueError)
    assert errors.one_line(ValueError("\n  first line\nsecond")) == "first line"
    assert errors.one_line(KeyError()) == ""


X6 = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [5.0, 5.0], [5.1, 5.0], [5.0, 5.1]])


def test_dpmeans_overflow_is_kmax_error_naming_the_slots_used():
    with pytest.raises(KMaxExhaustedError, match=r"all k_max=2 cluster slots.*lam=1e-06"):
        ppclust.DPMeans(lam=1e-6, k_max=2, random_state=0).fit(X6)


def test_non_finite_objective_is_a_ppclust_error_not_a_bare_floatingpointerror():
    # finite data and lam, but J = sum D + lam K = 2 * 1.5e308 overflows (was a bare FloatingPointError)
    X = np.array([[0.0], [0.1], [0.2], [1.3e154], [1.3e154], [1.3e154]])
    with pytest.raises(NonFiniteError, match=r"non-finite objective in 1 of 1 restart"):
        ppclust.DPMeans(lam=1.5e308, random_state=0).fit(X)


# ---------------------------------------------------------------------------------------------
# the messages listed by the audit (each failed, or said something misleading, on the old code)


def test_lam_k_larger_than_n_names_lam_k():
    with pytest.raises(ValueError, match=r"`lam_k`.*n_samples=2") as e:
        ppclust.DPMeans(lam_k=5).fit(X6[:2])
    assert not str(e.value).startswith("k must")


@pytest.mark.parametrize("cls", [ppclust.DPMeans, ppclust.RDPMeans])
def test_identical_points_say_so_instead_of_lam_too_small(cls):
    with pytest.raises(ValueError, match=r"all points are identical.*lam must be > 0") as e:
        cls().fit(np.ones((6, 2)))
    assert "too small" not in str(e.value)
    assert cls(lam=1.0, random_state=0).fit(np.ones((6, 2))).n_clusters_ == 1  # an explicit lam works


def test_tvclust_bad_point_estimate_is_refused_before_sampling(monkeypatch):
    from ppclust.inference import gibbs

    def no_sampling(*a, **k):
        raise AssertionError("sampled before validating point_estimate")

    monkeypatch.setattr(gibbs, "sample", no_sampling)
    with pytest.raises(ValueError, match=r"point_estimate.*must be.*'foo'"):
        ppclust.TVClust(point_estimate="foo", n_warmup=0, n_chains=1).fit(X6)


@pytest.mark.parametrize("value", [float("nan"), -1.0])
def test_ssgmm_bad_reg_covar_is_named(value):
    with pytest.raises(ValueError, match=rf"reg_covar.*must be.*[gG]ot {value}"):
        ppclust.SemiSupervisedGMM(reg_covar=value).fit(X6)


# ---------------------------------------------------------------------------------------------
# soft links combine (TVClust, RDP-means); hard-constraint paths reject contradictions


def test_link_models_decide_conflicts_in_one_place():
    assert LINK_MODELS == {"soft": "keep", "hard": "error"}
    soft = link_side_info(4, None, [(0, 1)], [(1, 0)], link_model="soft")
    assert soft.has_conflicts and soft.n_links == 2
    with pytest.raises(ConflictingLinksError, match=r"first: \(0, 1\)\); this method treats links") as e:
        link_side_info(4, None, [(0, 1)], [(1, 0)])
    assert "on_conflict" not in str(e.value)  # estimators have no such parameter
    # a given cannot-link against two equal labels is the same contradiction
    with pytest.raises(ConflictingLinksError, match="labels `y`"):
        link_side_info(4, [0, 0, -1, -1], None, [(0, 1)])
    assert link_side_info(4, [0, 0, -1, -1], None, [(0, 1)], link_model="soft").n_links == 2


def _blobs():
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(size=(8, 2)) * 0.3, rng.normal(size=(8, 2)) * 0.3 + 6.0]


def _rdp(X, side=None, **links):
    # the authors' uncapped schedule, so a single link is enforced however far its points lie; every link at
    # its given weight (the reliability weighting reads a pair given with both signs as two pair counts, as
    # TVClust does, so it would weigh the net link and the two entries differently)
    est = ppclust.RDPMeans(
        lam=20.0, xi_max=1e12, link_reliability=None, random_state=0, n_init=1, max_iter=200
    )
    return est.fit(X, must_link=side, **links) if side is not None else est.fit(X, **links)


def test_rdpmeans_contradicting_pair_runs_and_equals_the_net_weight():
    """Links are penalties -xi1 f + xi2 s (Khashabi et al. eq. 12): with xi_ratio=1 a pair with weights
    w+ and w- acts as one link of net weight w+ - w-."""
    X = _blobs()
    free = _rdp(X)
    both = _rdp(X, must_link=[(0, 8)], cannot_link=[(8, 0)])  # was an error
    np.testing.assert_array_equal(both.labels_, free.labels_)  # 1 - 1 = 0: no link
    assert both.objective_ == pytest.approx(free.objective_)

    def pairs(w_plus, w_minus):
        return SideInfo.from_pairs(16, [(0, 8), (0, 8)], [1, -1], [w_plus, w_minus], on_conflict="keep")

    for (wp, wm), net_sign, net in [((3.0, 1.0), 1, 2.0), ((1.0, 3.0), -1, 2.0), ((2.5, 2.5), 1, 0.0)]:
        combined = _rdp(X, pairs(wp, wm))
        ref = _rdp(X, SideInfo.from_pairs(16, [(0, 8)], [net_sign], [net])) if net else free
        np.testing.assert_array_equal(combined.labels_, ref.labels_)
        assert combined.objective_ == pytest.approx(ref.objective_)
    # the net may-link is enforced (the test would not see a dropped or mis-signed link)
    joined = _rdp(X, pairs(3.0, 1.0)).labels_
    assert joined[0] == joined[8] and free.labels_[0] != free.labels_[8]


def test_hard_link_method_still_rejects_contradictions():
    with pytest.raises(ConflictingLinksError, match="hard constraints"):
        ppclust.SMIC(n_clusters=2, n_neighbors=3).fit(_blobs(), must_link=[(0, 1)], cannot_link=[(1, 0)])


# ---------------------------------------------------------------------------------------------
# labels_: int64, never -1, for every estimator


def _name(cls, new, old):
    """The parameter's current name (the parameter-vocabulary work renames some; old names warn)."""
    return new if new in inspect.signature(cls).parameters else old


def _eight(X, z):
    y = np.where(np.arange(len(z)) % 3 == 0, z, -1)
    ml = [(0, 1), (8, 9)]
    cl = [(0, 8)]
    return [
        (
            ppclust.TVClust(
                **{_name(ppclust.TVClust, "n_draws", "n_samples"): 3}, n_warmup=3, n_chains=1, random_state=0
            ),
            dict(must_link=ml, cannot_link=cl),
        ),
        (ppclust.DPMeans(lam=20.0, random_state=0), {}),
        (ppclust.RDPMeans(lam=20.0, random_state=0, max_iter=50), dict(must_link=ml, cannot_link=cl)),
        (
            ppclust.SemiSupervisedGMM(
                **{_name(ppclust.SemiSupervisedGMM, "n_clusters", "n_components"): 2}, random_state=0
            ),
            dict(y=y),
        ),
        (ppclust.CECIB(n_clusters=2, n_init=1, random_state=0), dict(y=y)),
        (ppclust.C3L(n_clusters=2, n_init=1, random_state=0), dict(y=y)),
        (ppclust.CCIB(n_clusters=2, n_init=1, random_state=0), dict(background=np.arange(len(z)) % 2)),
        (
            ppclust.SMIC(n_clusters=2, n_neighbors=3, gamma=1.0, eta=0.0, random_state=0),
            dict(must_link=ml, cannot_link=cl),
        ),
    ]


@pytest.mark.filterwarnings("ignore")
def test_labels_are_int64_and_never_minus_one_for_all_eight_estimators():
    X = _blobs()
    z = np.repeat([0, 1], 8)
    names = set()
    for est, kw in _eight(X, z):
        y = kw.pop("y", None)
        labels = est.fit(X, y, **kw).labels_
        names.add(type(est).__name__)
        assert isinstance(labels, np.ndarray) and labels.dtype == np.int64, (type(est).__name__, labels.dtype)
        assert labels.shape == (16,) and labels.min() >= 0, (type(est).__name__, labels)
        assert np.array_equal(np.unique(labels), np.arange(est.n_clusters_)), type(est).__name__
    assert len(names) == 8
