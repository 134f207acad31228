"""thinklens.calibration.stats against plain formulas, and the verdict rules against planted effects and nulls.

Mutants these tests kill (each checked by hand against the code):
- Wilson with z of a 90% level, or the continuity-corrected variant: ``test_wilson_is_the_score_formula``;
- Clopper-Pearson swapped for Wilson (too narrow near 0): ``test_clopper_pearson_is_the_beta_quantile``;
- a bootstrap that resamples within a unit instead of whole units, or ignores the seed: ``test_bootstrap_*``;
- the sign-flip test one-sided where two-sided is asked, or without the +1 correction (p = 0):
  ``test_sign_flip_*``;
- McNemar on all pairs instead of the discordant ones: ``test_mcnemar_counts_only_discordant_pairs``;
- Holm without the running maximum (not monotone): ``test_holm_is_monotone_in_the_sorted_order``;
- a verdict that ignores the control's side or the ceiling: ``test_verdicts_*``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import beta, binom, norm

from thinklens.calibration.findings import (
    Finding,
    accuracy_finding,
    findings_doc,
    headline,
    paired_finding,
    ratio_finding,
    verdict_from_interval,
)
from thinklens.calibration.stats import bootstrap_ci, clopper_pearson, holm, mcnemar, paired_bootstrap, sign_flip_test, wilson
from thinklens.errors import ThinklensError


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (45, 50), (50, 50), (137, 400)])
def test_wilson_is_the_score_formula(k, n):
    z = norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(max(0.0, centre - half), abs=1e-9)
    assert hi == pytest.approx(min(1.0, centre + half), abs=1e-9)


@pytest.mark.parametrize("k,n", [(0, 20), (1, 20), (10, 20), (20, 20)])
def test_clopper_pearson_is_the_beta_quantile(k, n):
    lo, hi = clopper_pearson(k, n)
    want_lo = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    want_hi = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    assert lo == pytest.approx(want_lo, abs=1e-9) and hi == pytest.approx(want_hi, abs=1e-9)


def test_interval_inputs_are_checked():
    with pytest.raises(ThinklensError, match="0 <= k <= n"):
        wilson(11, 10)
    with pytest.raises(ThinklensError, match="level"):
        wilson(1, 10, level=95)
    assert wilson(0, 0) == (0.0, 1.0)


def test_wilson_covers_at_its_level():
    """Coverage over many binomial draws (an oracle on the interval's meaning, not its formula)."""
    rng = np.random.default_rng(0)
    p, n = 0.3, 80
    ks = rng.binomial(n, p, size=2000)
    covered = np.mean([wilson(int(k), n)[0] <= p <= wilson(int(k), n)[1] for k in ks])
    assert 0.93 <= covered <= 0.975


def test_bootstrap_resamples_whole_units_and_is_seeded():
    values = np.r_[np.zeros(50), np.ones(50)]
    lo, hi = bootstrap_ci(values, seed=3)
    assert (lo, hi) == bootstrap_ci(values, seed=3)
    # the mean of 100 Bernoulli(0.5) units has sd 0.05: the 95% interval is about +-0.1
    assert lo == pytest.approx(0.4, abs=0.03) and hi == pytest.approx(0.6, abs=0.03)
    assert bootstrap_ci(np.full(30, 2.5)) == (2.5, 2.5)


def test_bootstrap_refuses_nan_and_2d():
    with pytest.raises(ThinklensError, match="finite"):
        bootstrap_ci([1.0, float("nan")])
    with pytest.raises(ThinklensError, match="1-d"):
        bootstrap_ci(np.ones((3, 2)))


def test_sign_flip_exact_matches_enumeration():
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.4, -0.2, 0.1, 0.6])
    null = [np.mean(np.array(s) * d) for s in itertools.product((-1, 1), repeat=d.size)]
    obs = d.mean()
    want_two = np.mean(np.abs(null) >= abs(obs) - 1e-12)
    want_greater = np.mean(np.array(null) >= obs - 1e-12)
    assert sign_flip_test(d) == pytest.approx(want_two)
    assert sign_flip_test(d, alternative="greater") == pytest.approx(want_greater)
    assert sign_flip_test(-d, alternative="less") == pytest.approx(want_greater)


def test_sign_flip_random_never_zero_and_calibrated():
    rng = np.random.default_rng(1)
    assert sign_flip_test(np.full(40, 1.0)) > 0  # the +1 correction
    ps = [sign_flip_test(rng.normal(size=30), n_perm=500, seed=i) for i in range(200)]
    assert 0.02 <= np.mean(np.array(ps) < 0.05) <= 0.09


def test_mcnemar_counts_only_discordant_pairs():
    a = np.array([1] * 30 + [1] * 8 + [0] * 2 + [0] * 60, dtype=bool)
    b = np.array([1] * 30 + [0] * 8 + [1] * 2 + [0] * 60, dtype=bool)
    want = min(1.0, 2 * binom.cdf(2, 10, 0.5))
    assert mcnemar(a, b) == pytest.approx(want)
    with pytest.raises(ThinklensError, match="same problems"):
        mcnemar(a, b[:-1])


def test_holm_is_monotone_in_the_sorted_order():
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([0.2, 0.001, 0.5, 0.04]) == [0.4, 0.004, 0.5, 0.12]


def test_paired_bootstrap_diff_and_interval():
    rng = np.random.default_rng(2)
    b = rng.normal(size=60)
    r = paired_bootstrap(b + 0.5, b)
    assert r.diff == pytest.approx(0.5) and r.ci == pytest.approx((0.5, 0.5)) and r.p < 1e-3 and r.n == 60
    with pytest.raises(ThinklensError, match="same units"):
        paired_bootstrap(b, b[:-1])


def test_verdicts_follow_the_control_side_and_the_ceiling():
    assert verdict_from_interval((0.6, 0.8), 0.5, n=100) == "effect"
    assert verdict_from_interval((0.6, 0.8), 0.5, n=100, higher_is_effect=False) == "no effect"
    assert verdict_from_interval((0.2, 0.4), 0.5, n=100, higher_is_effect=False) == "effect"
    assert verdict_from_interval((0.6, 0.8), 0.5, n=5) == "too few samples"
    assert verdict_from_interval((0.98, 1.0), 1.0, n=100, ceiling=1.0, ceiling_margin=0.0) == "at ceiling"


def test_verdicts_planted_and_null_accuracy():
    assert accuracy_finding("m", 90, 100, control="c", control_k=60, control_n=100).verdict == "effect"
    assert accuracy_finding("m", 62, 100, control="c", control_k=60, control_n=100).verdict == "no effect"
    # overlapping Wilson intervals stay "no effect" even when the control's point is outside the method's interval
    assert accuracy_finding("m", 70, 100, control="c", control_k=58, control_n=100).verdict == "no effect"
    assert accuracy_finding("m", 100, 100, control="c", control_k=100, control_n=100).verdict == "at ceiling"


def test_verdicts_planted_and_null_paired():
    rng = np.random.default_rng(3)
    base = rng.random(200)
    planted = paired_finding("p", base + 0.1 + rng.normal(0, 0.05, 200), base, control="c", statistic="s")
    null = paired_finding("n", base + rng.normal(0, 0.05, 200), base, control="c", statistic="s")
    assert planted.verdict == "effect" and null.verdict == "no effect"
    control = rng.random(150) < 0.5
    better = control | (rng.random(150) < 0.4)
    assert paired_finding("b", better, control, control="c", statistic="acc", binary=True).verdict == "effect"
    assert paired_finding("b", control, better, control="c", statistic="acc", binary=True).verdict == "no effect"


def test_enrichment_needs_its_interval_to_exclude_one():
    assert ratio_finding("so", 1.007, (0.33, 1.8), n=40).verdict == "no effect"
    assert ratio_finding("wait", 3.2, (2.1, 4.5), n=40).verdict == "effect"


def test_finding_json_and_headline():
    f = paired_finding("MI beats shuffled", [0.5] * 20, [0.5] * 20, control="shuffled answers", statistic="mean MI")
    doc = findings_doc([f])[0]
    assert set(doc) >= {"claim", "statistic", "value", "ci", "n", "control", "control_value", "verdict"}
    assert doc["verdict"] == "no effect" and doc["n"] == 20 and len(doc["ci"]) == 2
    assert headline(doc, effect="answer-specific MI", otherwise="no answer-specific MI: the shuffled control matches") \
        == "no answer-specific MI: the shuffled control matches (no effect)"
    assert "-> no effect" in f.line()
    with pytest.raises((ThinklensError, TypeError)):  # the runtime type check under pytest, else our own
        Finding("c", "s", 1.0, (0, 1), 10, "", None, "maybe")  # type: ignore[arg-type]


def test_no_headroom_is_its_own_verdict_not_at_ceiling():
    """59/60 right leaves one problem to fix: no method could reach p < 0.05 (mutant killed: a ceiling only at exactly
    1.0, which let recycling and TTTS at 0.983 read "no effect" as if they had been tested). That is "no headroom",
    not "at ceiling" (one meaning per verdict; 59/60 is not the top of the scale, and a rate of 0 is a floor)."""
    from thinklens.calibration.findings import no_headroom

    assert no_headroom(59, 60) and not no_headroom(54, 60) and not no_headroom(59, 60, higher_is_effect=False)
    assert accuracy_finding("recycling raises accuracy", 59, 60, control="greedy", control_k=59, control_n=60).verdict \
        == "no headroom"
    same = np.r_[np.ones(59), 0.0]
    assert paired_finding("rr", same, same, control="greedy", statistic="accuracy", binary=True).verdict == "no headroom"
    assert paired_finding("suppression lowers accuracy", same, same, control="none", statistic="accuracy", binary=True,
                          higher_is_effect=False).verdict == "no effect"
    # a rate already at 0 where lower is the effect: no headroom, never "at ceiling"
    zeros = np.zeros(60)
    assert paired_finding("fewer re-checks", zeros, zeros, control="none", statistic="rate", binary=True,
                          higher_is_effect=False, ceiling=0.0).verdict == "no headroom"
    assert accuracy_finding("fewer errors", 0, 60, control="none", control_k=0, control_n=60,
                            higher_is_effect=False).verdict == "no headroom"
    # at the top of the scale itself: at ceiling
    ones = np.ones(60)
    assert paired_finding("rr", ones, ones, control="greedy", statistic="accuracy", binary=True, ceiling=1.0).verdict \
        == "at ceiling"


def test_a_control_that_wins_is_no_effect_not_at_ceiling():
    """LatentSeek at 0.5 against an oracle best-of-N at 1.0 was "at ceiling": the control wins, so "no effect"."""
    method, control = np.r_[np.ones(30), np.zeros(30)], np.ones(60)
    f = paired_finding("seek beats oracle", method, control, control="oracle", statistic="accuracy", binary=True,
                       ceiling=1.0)
    assert f.verdict == "no effect" and f.extra["control_wins"] is True
    u = accuracy_finding("seek beats oracle", 30, 60, control="oracle", control_k=60, control_n=60)
    assert u.verdict == "no effect" and u.extra["control_wins"] is True
    near = np.r_[np.ones(58), np.zeros(2)]
    assert paired_finding("x", near, np.r_[np.ones(59), 0.0], control="c", statistic="accuracy", binary=True).verdict \
        == "no headroom"  # not significantly worse, and no room: no headroom
