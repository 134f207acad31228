"""The findings' own planted and null settings (thinklens/calibration/settings.py): a power is recovered
only when its interval clears the target, and the null passes only by an equivalence bound stated beforehand."""

from __future__ import annotations

from thinklens.calibration.settings import ALPHA, FPR_MARGIN, MIN_POWER, fpr_verdict, power_verdict


def test_power_is_recovered_only_when_its_interval_clears_the_target():
    assert power_verdict((0.708, 0.873)) == "failed"  # once read "power 0.8 [0.708, 0.873] recovered"
    assert power_verdict((0.797, 0.845)) == "failed"  # the recorded 0.822 on 200 problems: not shown
    assert power_verdict((MIN_POWER, 0.9)) == "recovered" and power_verdict((0.964, 1.0)) == "recovered"


def test_false_positive_rate_passes_only_inside_its_margin():
    assert (ALPHA, FPR_MARGIN) == (0.05, 0.02)
    assert fpr_verdict((0.012, 0.024)) == "no-effect"
    assert fpr_verdict((0.0, 0.0356)) == "no-effect"
    # an interval that reaches down to 0.05 but up to 0.09: consistent with the level, not shown within the margin
    assert fpr_verdict((0.04, 0.09)) == "failed" and fpr_verdict((0.0, 0.07)) == "failed"
