"""The CCIB reproduction protocol (Gondek & Hofmann 2004; spec sections 11.1 and 12): the synthetic
generators, Table 1, two-stage discovery and the text ordering. ``tests/inference/test_ccib_slow.py``
asserts the paper's claims on it; ``reproduce/ccib.py`` writes the tables."""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import mutual_info_score

from ppclust.datasets import make_two_factor_bits
from ppclust.estimators.ccib import CCIB

BAYES_C = 0.972  # spec 11.1: 1 - [P(>=3 of 4 flips) + P(2 flips)/2] at p = 0.1


def make_table1(n, rng, noise=0.1):
    return make_two_factor_bits(n, noise=noise, seed=rng)


def make_crossed_gaussian(n, rng, d=20, dominant=2.0, secondary=1.0):
    """Spec 12 analogue 2 (faces): y = mu^B_b + mu^C_c + noise with ||mu^B|| >> ||mu^C||."""
    b = rng.integers(0, 2, n)
    c = rng.integers(0, 2, n)
    mb = rng.normal(size=(2, d))
    mc = rng.normal(size=(2, d))
    mb *= dominant / np.linalg.norm(mb[0] - mb[1]) * np.sqrt(d) / 2
    mc *= secondary / np.linalg.norm(mc[0] - mc[1]) * np.sqrt(d) / 2
    return mb[b] + mc[c] + rng.normal(size=(n, d)), b, c


def make_crossed_corpus(k1, k2, per_cell, rng, words_bg=200, words_cls=30, w1=0.3, w2=0.2, length=150):
    """Spec 12 analogue 1: vocabulary = background + L1-class + L2-class words; mixture 0.5 bg + w1 L1
    + w2 L2 (w1 > w2, so L1 dominates); document lengths Poisson(length)."""
    vocab = words_bg + (k1 + k2) * words_cls
    bg = rng.dirichlet(np.ones(words_bg))
    docs, l1, l2 = [], [], []
    cls1 = [rng.dirichlet(np.ones(words_cls)) for _ in range(k1)]
    cls2 = [rng.dirichlet(np.ones(words_cls)) for _ in range(k2)]
    for a in range(k1):
        for b in range(k2):
            p = np.zeros(vocab)
            p[:words_bg] = (1 - w1 - w2) * bg
            o1 = words_bg + a * words_cls
            p[o1 : o1 + words_cls] = w1 * cls1[a]
            o2 = words_bg + (k1 + b) * words_cls
            p[o2 : o2 + words_cls] = w2 * cls2[b]
            for _ in range(per_cell):
                docs.append(rng.multinomial(max(1, rng.poisson(length)), p))
                l1.append(a)
                l2.append(b)
    return np.array(docs, float), np.array(l1), np.array(l2)


def precision(labels, ref):
    """Hungarian-matched accuracy (spec section 10); rectangular matching, unmatched clusters wrong."""
    m = np.zeros((labels.max() + 1, ref.max() + 1))
    np.add.at(m, (labels, ref), 1)
    r, c = linear_sum_assignment(-m)
    return m[r, c].sum() / len(labels)


def mi_bits(a, b):
    return mutual_info_score(a, b) / np.log(2)


def table1(n_sets=50, n=100, n_init=10, lam=0.3, variants=("CIB", "CCIB1", "CCIB2"), seed=0):
    """Mean / opt precision against B and C per variant; per-set mean Prec_C for the paired test."""
    rng = np.random.default_rng(seed)
    sets = [make_table1(n, rng) for _ in range(n_sets)]
    out = {}
    for v in variants:
        mean_b, mean_c, opt_b, opt_c = [], [], [], []
        t0 = time.perf_counter()
        for i, (y, b, c) in enumerate(sets):
            est = CCIB(2, lam=0.0 if v == "CIB" else lam, n_init=n_init, random_state=seed + i)
            est.fit(y, background=y[:, :8] if v == "CCIB2" else b)
            pb = [precision(lab, b) for lab in est.restart_labels_]
            pc = [precision(lab, c) for lab in est.restart_labels_]
            mean_b.append(np.mean(pb))
            mean_c.append(np.mean(pc))
            opt_b.append(pb[est.best_restart_])
            opt_c.append(pc[est.best_restart_])
        out[v] = {
            "mean_b": np.mean(mean_b),
            "mean_c": np.mean(mean_c),
            "opt_b": np.mean(opt_b),
            "opt_c": np.mean(opt_c),
            "per_set_c": np.array(mean_c),
            "seconds": time.perf_counter() - t0,
        }
    return out


def two_stage(n=400, seed=0, lam=0.1):
    """K5: stage 1 without background, stage 2 with Z = stage-1 clustering (Gaussian features)."""
    rng = np.random.default_rng(seed)
    y, b, c = make_crossed_gaussian(n, rng)
    s1 = CCIB(2, lam=lam, feature_model="gaussian", n_init=5, random_state=seed).fit(y)
    s2 = CCIB(2, lam=lam, feature_model="gaussian", n_init=5, random_state=seed).fit(y, background=s1.labels_)
    return {
        "stage1_dom": precision(s1.labels_, b),
        "stage1_sec": precision(s1.labels_, c),
        "stage2_dom": precision(s2.labels_, b),
        "stage2_sec": precision(s2.labels_, c),
    }


def text_ordering(k1, k2, per_cell, seed=0, lam=0.3, n_init=3):
    """K6 on the crossed-factor corpus: for Z = L1 and Z = L2, I(C, target) > I(C, known)."""
    rng = np.random.default_rng(seed)
    x, l1, l2 = make_crossed_corpus(k1, k2, per_cell, rng)
    rows = []
    for known, target, name in ((l1, l2, "Z=L1"), (l2, l1, "Z=L2")):
        t0 = time.perf_counter()
        est = CCIB(
            int(target.max() + 1), lam=lam, feature_model="multinomial", n_init=n_init, random_state=seed
        ).fit(x, background=known)
        sec = time.perf_counter() - t0
        chance = np.bincount(target).max() / len(target)
        rows.append(
            {
                "case": name,
                "prec_target": precision(est.labels_, target),
                "chance": chance,
                "i_known": mi_bits(est.labels_, known),
                "i_target": mi_bits(est.labels_, target),
                "seconds": sec,
            }
        )
    return x.shape, rows
