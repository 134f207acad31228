"""Issue 39: a latent method's win over an unmatched No-CoT (tiny-direct: 250 steps from tiny-pre, against CODI's
15000 from tiny-cot) is said, but never shown green as a finding the method claims: the page shows it amber, the
matched comparison keeps its colour."""

from __future__ import annotations

from app.dashboard import finding_tone
from thinklens.latent.latent_findings import table_findings

TRAINED = {"parent": "tiny-cot", "steps": 15000, "problems": "3-4 steps"}


def test_an_effect_over_an_unmatched_no_cot_is_not_green():
    rows = [{"label": "No-CoT SFT (tiny-direct)", "method": "direct", "problems": "3-4 steps", "accuracy": 0.1, "n": 40,
             "training": {"parent": "tiny-pre", "steps": 250, "problems": "1-8 steps"}},
            {"label": "matched No-CoT", "method": "sft", "no_cot": True, "problems": "3-4 steps", "accuracy": 0.1, "n": 40,
             "training": TRAINED},
            {"label": "CODI", "method": "codi", "problems": "3-4 steps", "accuracy": 0.95, "n": 40, "training": TRAINED}]
    correct = {"No-CoT SFT (tiny-direct)": [True] * 4 + [False] * 36, "matched No-CoT": [False] * 36 + [True] * 4,
               "CODI": [True] * 38 + [False] * 2}
    matched, unmatched = table_findings(rows, correct)
    assert matched["verdict"] == unmatched["verdict"] == "effect"
    assert finding_tone(matched) == "success"
    assert finding_tone(unmatched) == "warning"
