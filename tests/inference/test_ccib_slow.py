"""CCIB paper reproductions (spec section 12, claims K1, K4, K5, K6); run with ``-m slow``."""

from __future__ import annotations

import pytest
from scipy.stats import wilcoxon

from tests._ccib_protocol import table1, text_ordering, two_stage

pytestmark = pytest.mark.slow


def test_table1_k1():
    t = table1(n_sets=50, n_init=10)
    assert t["CCIB1"]["mean_c"] >= 0.95  # paper 0.970, Bayes 0.972
    assert 0.68 <= t["CIB"]["mean_c"] <= 0.85  # paper 0.773
    assert wilcoxon(t["CCIB1"]["per_set_c"], t["CIB"]["per_set_c"], alternative="greater").pvalue < 0.01
    assert t["CCIB2"]["mean_c"] >= 0.88 and t["CCIB2"]["opt_c"] >= t["CCIB2"]["mean_c"] - 1e-12
    assert all(r["mean_b"] <= 0.62 for r in t.values())


@pytest.mark.parametrize(
    "lam",
    [
        0.2,
        0.3,
        0.5,
        pytest.param(
            1.0,
            marks=pytest.mark.xfail(
                reason="measured 0.830 on 5 sets (reproduce/results/ccib.md): the dominant split wins",
                strict=False,
            ),
        ),
    ],
)
def test_lambda_robustness_k4(lam):
    assert table1(n_sets=20, lam=lam, variants=("CCIB1",), seed=200)["CCIB1"]["mean_c"] >= 0.9


def test_two_stage_k5():
    r = two_stage()
    assert r["stage1_dom"] >= 0.9 and r["stage1_sec"] < 0.65
    assert r["stage2_sec"] >= r["stage1_sec"] + 0.2


def test_text_ordering_k6():
    for k1, k2, per in ((2, 2, 100), (5, 6, 15)):
        _, rows = text_ordering(k1, k2, per)
        for row in rows:
            assert row["i_target"] > row["i_known"], row
            assert row["prec_target"] > row["chance"], row
