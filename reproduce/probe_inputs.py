"""Bad-input probes: every estimator fitted on data and side information users get wrong or that sit at
the edge of what the models take, each outcome classified.

For each (estimator, probe) the script fits a small copy of the estimator (3 blobs of 20 points in 2-D,
30% partial labels or links drawn from the truth) on the probe's input and classifies what it did:

* ``sensible``: the fit gave the partition expected of the input (the same as on the clean data, ARI at
  least 0.9, for an input that only rescales or pads the data), or it warned about the input;
* ``clear error``: it raised an error whose message names the input's problem (the probe's keywords);
* ``unclear``: it raised an error that does not name the problem;
* ``silent``: it returned a result that is not the expected one, without a warning.

Goal: 0 unclear, 0 silent. Writes ``reproduce/results/probe_inputs.md`` (and ``.json``).

    python -m reproduce.probe_inputs [estimator ...]
    python -m reproduce.probe_inputs --report   # the tables from the JSON of earlier runs
"""

from __future__ import annotations

import json
import re
import sys
import time
import warnings

import numpy as np
from sklearn.metrics import adjusted_rand_score

from ppclust._registry import METHODS
from reproduce._common import RESULTS, md_table, write_json, write_result

SCRIPT = "reproduce.probe_inputs"
OUTCOMES = ("sensible", "clear error", "unclear", "silent")

SETTINGS = {
    "tvclust": dict(n_draws=20, n_warmup=20, n_chains=1, random_state=0, progress_bar=False),
    "dpmeans": dict(random_state=0),
    "rdpmeans": dict(random_state=0),
    "ssgmm": dict(n_clusters=3, random_state=0, progress_bar=False),
    "bayesian-ssgmm": dict(
        n_clusters=3, n_draws=20, n_warmup=20, n_chains=1, random_state=0, progress_bar=False
    ),
    "cecib": dict(n_clusters=3, n_init=2, random_state=0, progress_bar=False),
    "c3l": dict(n_clusters=3, n_init=2, random_state=0, progress_bar=False),
    "ccib": dict(n_clusters=3, n_init=2, random_state=0, progress_bar=False),
    "smic": dict(n_clusters=3, random_state=0, progress_bar=False),
}
LINKS = ("tvclust", "rdpmeans", "smic")
LABELS = ("ssgmm", "bayesian-ssgmm", "cecib", "c3l", "ccib")


def _data():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 20)
    X = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[truth] + rng.normal(size=(60, 2))
    y = np.where(rng.random(60) < 0.3, truth, -1)
    pairs = rng.choice(60, size=(120, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    return X, truth, y, pairs[same][:30], pairs[~same][:30]


X0, TRUTH, Y0, ML0, CL0 = _data()


def side(name, y=Y0, ml=ML0, cl=CL0):
    """The side information ``name`` reads, from partial labels ``y`` or links ``ml``/``cl``."""
    if name in LINKS:
        return dict(must_link=ml, cannot_link=cl)
    if name == "c3l":  # two label categories
        return dict(partial_labels=np.where(np.asarray(y) == 2, 1, y))
    if name in LABELS:
        return dict(partial_labels=y)
    return {}


def _scaled(c):
    return lambda name: (X0 * c, side(name))


def _with_column(col):
    return lambda name: (np.c_[X0, col(X0)], side(name))


# probe -> (input builder, expectation, error keywords). Expectations: "same" (the clean data's partition:
# X > 3 keeps the three blobs apart too), "error" (an error naming the problem), "degenerate" (a warning,
# one cluster or an error naming the data).
SCALE_WORDS = r"standardi[sz]e|scale|standard deviation|overflow"
PROBES = {
    "X * 1e-150": (_scaled(1e-150), "same", SCALE_WORDS),
    "X * 1e-300": (_scaled(1e-300), "same", SCALE_WORDS),
    "X * 1e150": (_scaled(1e150), "same", SCALE_WORDS),
    "X * 1e300": (_scaled(1e300), "same", SCALE_WORDS),
    "X + 1e9 (offset)": (lambda name: (X0 + 1e9, side(name)), "same", SCALE_WORDS + r"|offset|centre"),
    "constant column": (_with_column(lambda X: np.full(len(X), 3.0)), "same", r"constant"),
    "collinear column": (_with_column(lambda X: X[:, 0] + X[:, 1]), "same", r"collinear|singular"),
    "NaN in X": (
        lambda name: (np.where(np.arange(120).reshape(60, 2) == 7, np.nan, X0), side(name)),
        "error",
        r"nan",
    ),
    "inf in X": (
        lambda name: (np.where(np.arange(120).reshape(60, 2) == 7, np.inf, X0), side(name)),
        "error",
        r"inf",
    ),
    "1-D X": (lambda name: (X0[:, 0], side(name)), "error", r"2-d|reshape"),
    "strings in X": (
        lambda name: (X0.astype(str).astype(object) + "a", side(name)),
        "error",
        r"real numbers|numbers",
    ),
    "complex X": (lambda name: (X0 + 1j, side(name)), "error", r"complex"),
    "empty X": (lambda name: (np.zeros((0, 2)), {}), "error", r"sample"),
    "one sample": (lambda name: (X0[:1], {}), "degenerate", r"sample|n_clusters"),
    "identical points": (
        lambda name: (np.ones((60, 2)), side(name)),
        "degenerate",
        r"identical|distinct|constant|same point",
    ),
    "few distinct values (X > 3)": (
        lambda name: ((X0 > 3).astype(float), side(name)),
        "same",
        r"distinct|singular|constant|discrete",
    ),
    "labels of 4 classes": (
        lambda name: (X0, side(name, y=np.where(np.arange(60) == 5, 3, Y0))),
        "error",
        r"class|label|n_clusters|categor",
    ),
    "labels of wrong length": (
        lambda name: (X0, side(name, y=Y0[:50])),
        "error",
        r"length|sample|rows|shape|50",
    ),
    "labels as names": (
        lambda name: (
            X0,
            side(name, y=np.where(Y0 >= 0, np.array(["a", "b", "c"])[Y0], "-1").astype(object)),
        ),
        "same",
        r"integer|label",
    ),
    "labels of floats 0.5": (
        lambda name: (X0, side(name, y=np.where(Y0 >= 0, Y0 + 0.5, -1.0))),
        "error",
        r"integer|label",
    ),
    "link index out of range": (
        lambda name: (X0, side(name, ml=np.r_[ML0, [[0, 60]]])),
        "error",
        r"index|range|60",
    ),
    "links of wrong shape": (lambda name: (X0, side(name, ml=ML0[:, :1])), "error", r"shape|pairs|\(m, 2\)"),
    "a point linked to itself": (
        lambda name: (X0, side(name, ml=np.r_[ML0, [[3, 3]]])),
        "degenerate",
        r"itself|self",
    ),
    "the same pair must- and cannot-linked": (  # noisy links: one contradiction must not derail the fit
        lambda name: (X0, side(name, cl=np.r_[CL0, ML0[:1]])),
        "same",
        r"both|contradict|conflict",
    ),
}
ONLY = {  # probes that apply to some estimators only
    "labels of 4 classes": LABELS,
    "labels of wrong length": LABELS,
    "labels as names": LABELS,
    "labels of floats 0.5": LABELS,
    "link index out of range": LINKS,
    "links of wrong shape": LINKS,
    "a point linked to itself": LINKS,
    "the same pair must- and cannot-linked": LINKS,
}
# (probe, estimator) -> expectation where an estimator's model differs: CEC-IB's n_clusters is the initial
# number of clusters (clusters are removed and a labelled class may keep its own), so a fourth class is data
EXPECT = {("labels of 4 classes", "cecib"): "same"}


def _fit(name, X, kw):
    """Fit; returns (labels or None, warnings' messages, error or None)."""
    est = METHODS[name].load()(**SETTINGS[name])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(X, **kw)
        except Exception as err:  # noqa: BLE001  (the probes record every outcome)
            return None, [], err
    relevant = [
        str(w.message)
        for w in caught
        if not issubclass(w.category, (DeprecationWarning, FutureWarning))
        and "did not converge" not in str(w.message)
        and "R-hat" not in str(w.message)
        and "ESS" not in str(w.message)
    ]
    return np.asarray(est.labels_), relevant, None


def classify(expect, words, labels, warned, err, ref):
    """The probe's outcome and a note. ``"same"``: the partition of the clean fit (ARI at least 0.9), or
    one as close to the truth as the clean fit's (ARI to the truth at most 0.05 below)."""
    if err is not None:
        text = f"{type(err).__name__}: {err}"
        clear = re.search(words, str(err), re.IGNORECASE) is not None
        return ("clear error" if clear else "unclear"), text
    if warned:
        return "sensible", "warned: " + warned[0]
    k = len(np.unique(labels))
    if expect == "same":
        ari, truth, clean = (
            adjusted_rand_score(ref, labels),
            adjusted_rand_score(TRUTH, labels),
            adjusted_rand_score(TRUTH, ref),
        )
        ok = ari >= 0.9 or truth >= clean - 0.05
        note = (
            f"ARI {ari:.2f} against the clean fit, {truth:.2f} against the truth (clean {clean:.2f}), K={k}"
        )
        return ("sensible" if ok else "silent"), note
    if expect == "degenerate":
        return ("sensible" if k <= 1 or len(labels) <= 1 else "silent"), f"no warning, K={k}"
    return "silent", f"fitted without an error or a warning, K={k}"


def probe(name):
    """The rows of one estimator's probes and their counts."""
    rows, counts = [], dict.fromkeys(OUTCOMES, 0)
    ref, _, err = _fit(name, X0, side(name))
    assert err is None, (name, err)
    for probe_name, (build, expect, words) in PROBES.items():
        if probe_name in ONLY and name not in ONLY[probe_name]:
            continue
        X, kw = build(name)
        t0 = time.perf_counter()
        labels, warned, err = _fit(name, X, kw)
        expect = EXPECT.get((probe_name, name), expect)
        outcome, note = classify(expect, words, labels, warned, err, ref)
        counts[outcome] += 1
        rows.append([name, probe_name, outcome, note.replace("|", "/").replace("\n", " ")[:200]])
        print(rows[-1], f"{time.perf_counter() - t0:.1f} s", flush=True)
    return rows, counts


def main(names=None):
    """Probe ``names`` (default: every estimator) and rewrite the results from every estimator's last run
    (the JSON keeps one section per estimator, so that estimators can be probed in separate runs)."""
    report_only = names == ["--report"]  # rebuild the tables from the JSON, probing nothing
    for name in [] if report_only else names or list(METHODS):
        t0 = time.perf_counter()
        rows, counts = probe(name)
        write_json(
            "probe_inputs",
            {name: dict(rows=rows, counts=counts, seconds=time.perf_counter() - t0)},
            SCRIPT,
            True,
        )
    data = json.loads((RESULTS / "probe_inputs.json").read_text())
    done = [m for m in METHODS if m in data]
    rows = [r for m in done for r in data[m]["rows"]]
    total = {k: sum(data[m]["counts"][k] for m in done) for k in OUTCOMES}
    text = (
        "# Bad-input probes\n\n"
        f"`python -m {SCRIPT}`: {len(rows)} probes ({len(PROBES)} inputs x the estimators they apply to: "
        f"{', '.join(done)}). "
        + ", ".join(f"{k}: {v}" for k, v in total.items())
        + " (goal: 0 unclear, 0 silent). Each estimator's machine line is in `probe_inputs.json`.\n\n"
        + md_table(["estimator", "probe", "outcome", "what it did"], rows)
        + "\n"
    )
    path = write_result("probe_inputs.md", text)
    print(json.dumps(total), "->", path)
    return total


if __name__ == "__main__":
    main(sys.argv[1:])
