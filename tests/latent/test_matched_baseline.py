"""The latent table's No-CoT baselines: every latent method is compared first with the No-CoT trained like
it (same parent, same training problems, at least its optimizer steps); a No-CoT trained otherwise (tiny-direct: 250
steps from tiny-pre, against CODI's 15000 from tiny-cot) is still compared, says it is unmatched and is never first;
a method with no matched No-CoT gets a finding that says so in first place. Oracles: McNemar recomputed on the
planted outcomes; the steps of the zoo's latent models from their recipes' own numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinklens.calibration.stats import mcnemar
from thinklens.latent.latent_findings import baseline_mismatch, table_findings, training_of

ROOT = Path(__file__).resolve().parents[2]
CODI = {"parent": "tiny-cot", "steps": 15000, "problems": "3-4 steps"}
COCONUT = {"parent": "tiny-cot", "steps": 2000, "problems": "3-4 steps"}
DIRECT = {"parent": "tiny-pre", "steps": 250, "problems": "1-8 steps"}


def _rows(with_matched: bool = True) -> tuple[list[dict], dict[str, list[bool]]]:
    rows = [{"label": "No-CoT SFT (tiny-direct)", "method": "direct", "problems": "3-4 steps", "accuracy": 0.1, "n": 40,
             "training": DIRECT}]
    correct = {"No-CoT SFT (tiny-direct)": [True] * 4 + [False] * 36}
    if with_matched:
        rows.append({"label": "SFT (No-CoT, 12000+3000 steps)", "method": "sft", "no_cot": True, "problems": "3-4 steps",
                     "accuracy": 0.5, "n": 40, "training": CODI})
        correct["SFT (No-CoT, 12000+3000 steps)"] = [True] * 20 + [False] * 20
    rows += [{"label": "CODI", "method": "codi", "problems": "3-4 steps", "accuracy": 0.95, "n": 40, "training": CODI},
             {"label": "Coconut", "method": "coconut", "problems": "3-4 steps", "accuracy": 0.3, "n": 40, "training": COCONUT}]
    correct["CODI"] = [True] * 38 + [False] * 2  # planted: beats both No-CoT rows
    correct["Coconut"] = [True] * 12 + [False] * 28  # planted: below the matched one, above tiny-direct
    return rows, correct


def test_the_matched_no_cot_comes_first_and_an_unmatched_one_says_so_last():
    rows, correct = _rows()
    found = table_findings(rows, correct)
    order = [(f["claim"].split(" beats ")[0], f["control"], f["extra"]["baseline"]) for f in found]
    assert order == [("CODI", "SFT (No-CoT, 12000+3000 steps)", "matched"), ("Coconut", "SFT (No-CoT, 12000+3000 steps)", "matched"),
                     ("CODI", "No-CoT SFT (tiny-direct)", "unmatched"), ("Coconut", "No-CoT SFT (tiny-direct)", "unmatched")]
    codi_matched, coconut_matched, codi_direct, _ = found
    assert codi_matched["p"] == pytest.approx(mcnemar(correct["CODI"], correct["SFT (No-CoT, 12000+3000 steps)"]), abs=1e-6)
    assert codi_matched["verdict"] == "effect" and "(the matched No-CoT)" in codi_matched["claim"]
    assert coconut_matched["verdict"] == "no effect"  # the matched baseline does better: never an effect
    assert codi_direct["verdict"] == "effect" and "an unmatched No-CoT" in codi_direct["claim"]
    why = codi_direct["extra"]["unmatched"]
    assert why == "trained from tiny-pre, not tiny-cot; 250 steps, not 15000; on 1-8 steps problems, not 3-4 steps"


def test_a_method_without_a_matched_no_cot_leads_with_that_not_with_the_unmatched_comparison():
    rows, correct = _rows(with_matched=False)
    found = table_findings(rows, correct)
    assert [f["verdict"] for f in found[:2]] == ["too few samples", "too few samples"]
    first = found[0]
    assert first["claim"] == "CODI beats a matched No-CoT on the same 3-4 steps problems" and first["n"] == 0
    assert first["extra"]["baseline"] == "missing" and "15000 steps" in first["extra"]["otherwise"]
    assert [f["extra"]["baseline"] for f in found[2:]] == ["unmatched", "unmatched"]
    assert found[2]["verdict"] == "effect"  # CODI does beat tiny-direct: said, as unmatched, after the missing match


@pytest.mark.parametrize("baseline, expect", [
    (CODI, ""),
    ({**CODI, "steps": 20000}, ""),  # trained longer: the method's win can only be harder
    ({**CODI, "steps": 14999}, "14999 steps, not 15000"),
    ({**CODI, "parent": "tiny-pre"}, "trained from tiny-pre, not tiny-cot"),
    ({**CODI, "problems": "6-8 steps"}, "on 6-8 steps problems, not 3-4 steps"),
    (None, "not known"),
])
def test_a_no_cot_is_matched_only_from_the_same_parent_problems_and_at_least_the_steps(baseline, expect):
    why = baseline_mismatch({"label": "CODI", "training": CODI}, {"training": baseline})
    assert (why == "") if not expect else (expect in why)


def test_training_of_reads_the_zoo_models_folders():
    """The steps each zoo model was trained for, from the numbers of its own recipe: tiny-codi 12000 then 3000 more,
    Coconut 3 stages of 400 and a final 800, Latent-SFT 200 + 200 + 200 then 800, tiny-direct 250 from tiny-pre."""
    def meta(name: str) -> dict:
        folder = ROOT / "data" / "zoo" / name
        return json.loads(next(folder / f for f in ("latent.json", "zoo.json") if (folder / f).is_file()).read_text())

    assert training_of(meta("tiny-codi")) == {"parent": "tiny-cot", "steps": 12000 + 3000, "problems": "3-4 steps"}
    assert training_of(meta("tiny-coconut"))["steps"] == 3 * 400 + 800
    assert training_of(meta("tiny-latent-sft"))["steps"] == 3 * 200 + 800
    assert training_of(meta("tiny-direct")) == {"parent": "tiny-pre", "steps": 250, "problems": "1-8 steps"}
    record = json.loads((ROOT / "results/records/latent-sft-nocot-12k-plus3k/model/latent.json").read_text())
    assert training_of(record) == training_of(meta("tiny-codi"))  # the recorded No-CoT is matched to tiny-codi
    assert training_of({"model_type": "llama"}) is None
