"""The CODI settings of ``thinklens run validate``: their verdict rules against planted rows (the
default tier, no model), the noise that removes what the latents carry, and the quick versions on the committed
organisms (`slow`)."""

from __future__ import annotations

import pytest
import torch

from thinklens.calibration.controls import SettingContext
from thinklens.latent import codi_validation as cv
from thinklens.zoo.registry import zoo_path

SETTINGS = {s.name: s for s in cv.SETTINGS if s.method == "codi"}
COCONUT = {s.name: s for s in cv.SETTINGS if s.method == "coconut"}
#: each latent organism's planted and null runs: Coconut through its settings; Latent-SFT, whose recipe compresses
#: 2 chain tokens a latent (below the 3x target), has no settings and is scored by the same functions in its table row
RUNS = {"coconut": (COCONUT["planted-serial"].run, COCONUT["null-latents"].run),
        "latent_sft": (lambda ctx: cv._planted(ctx, "latent_sft"), lambda ctx: cv._null(ctx, "latent_sft"))}
needs_zoo = pytest.mark.skipif(any(zoo_path(n) is None for n in cv.ORGANISMS.values()),
                               reason="needs the committed serial organisms (data/zoo/)")


def _ctx(tmp_path, quick: bool = True) -> SettingContext:
    return SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1)


def _grades(k: int, n: int = 100) -> list[bool]:
    return [True] * k + [False] * (n - k)


def _planted_rows(nocot: int, cot: int, codi: int, *, codi_positions: float = 12.0, variant: str = ""):
    def rows(ctx, keys, noise=False):
        assert not noise and keys == ("nocot", "cot", "codi" + variant, "explicit" + variant)
        return {"nocot": ({"reasoning_positions": 0.0}, _grades(nocot)),
                "cot": ({"reasoning_positions": 48.0}, _grades(cot)),
                "codi" + variant: ({"reasoning_positions": codi_positions, "latent_hits": 0.5}, _grades(codi)),
                "explicit" + variant: ({"reasoning_positions": 40.0, "last_step_misses": 0.01}, _grades(99))}
    return rows


@pytest.mark.parametrize("nocot, cot, codi, positions, verdict", [
    (30, 95, 80, 12.0, "recovered"),
    (30, 95, 45, 12.0, "failed"),   # a gain of 15 points: below the 20 the item asks
    (50, 95, 90, 12.0, "failed"),   # the matched No-CoT above 40%: the task does not need a chain
    (30, 85, 80, 12.0, "failed"),   # the matched CoT-SFT below 90%: the task is not learnt with a chain
    (30, 95, 80, 24.0, "failed"),   # 2x compression: below 3x
])
def test_planted_verdict_needs_the_precondition_compression_and_a_20_point_paired_gain(
        tmp_path, monkeypatch, nocot, cot, codi, positions, verdict):
    monkeypatch.setattr(cv, "_rows", _planted_rows(nocot, cot, codi, codi_positions=positions))
    check = SETTINGS["planted-serial"].run(_ctx(tmp_path))
    assert check.verdict == verdict and check.statistic == "gain_over_nocot" and check.n == 100
    assert check.value == pytest.approx((codi - nocot) / 100)
    assert check.ci[0] <= check.value <= check.ci[1]
    assert check.details["compression"] == pytest.approx(48.0 / positions)
    assert check.details["precondition_met"] is (nocot <= 40 and cot >= 90)
    assert check.details["nocot_accuracy"]["accuracy"] == nocot / 100 and check.details["findings"][0]["n"] == 100
    assert check.details["codi_explicit_accuracy"]["accuracy"] == 0.99 and check.details["latent_hits"] == 0.5
    assert check.details["explicit_last_step_misses"] == 0.01


@pytest.mark.parametrize("setting, variant", [("planted-serial", ""), ("planted-serial-full-chain", "_full")])
def test_each_planted_setting_scores_its_own_codi(tmp_path, monkeypatch, setting, variant):
    """Mutant killed: the full-chain setting scoring the reference-default CODI (the rows' keys are asserted)."""
    monkeypatch.setattr(cv, "_rows", _planted_rows(30, 95, 80, variant=variant))
    check = SETTINGS[setting].run(_ctx(tmp_path))
    assert check.verdict == "recovered" and check.details["organisms"]["codi" + variant] == cv.ORGANISMS["codi" + variant]


def test_last_step_misses_counts_a_right_chain_short_of_its_last_step_with_a_wrong_answer():
    from thinklens.tasks import generate_problems

    p = generate_problems(1, seed=3, n_steps=3)[0]
    chain = " ".join(f"<< {s.left} {s.op} {s.right} = {s.result} >>" for s in p.steps)
    short = chain.rsplit(" <<", 1)[0]
    records = [{"text": short + " #### 1000", "correct": False},          # the one-pass last step missed
               {"text": short + f" #### {p.steps[-1].result}", "correct": True},     # right: not a miss
               {"text": chain + " #### 1000", "correct": False},          # the whole chain written: another failure
               {"text": "<< 1 + 1 = 2 >> #### 1000", "correct": False}]  # a wrong chain: another failure
    assert cv.last_step_misses([p] * 4, records) == 0.25


# a 20-point loss passed the old rule (no significant gain); the equivalence rule fails it as it fails a gain
# (tests/latent/test_null_equivalence.py holds the rule's oracle tests)
@pytest.mark.parametrize("noised, verdict", [(32, "no-effect"), (30, "no-effect"), (10, "failed"), (70, "failed")])
def test_null_verdict_is_the_noised_codi_shown_equivalent_to_the_matched_no_cot(tmp_path, monkeypatch, noised, verdict):
    seen = {}

    def rows(ctx, keys, noise=False, plan=None):
        seen.update(keys=keys, noise=noise)
        return {"nocot": ({}, _grades(30)), "codi": ({"latent_hits": 0.0}, _grades(noised))}

    monkeypatch.setattr(cv, "_rows", rows)
    monkeypatch.setattr(cv, "_steps", lambda ctx, plan=None: [6] * 100)
    check = SETTINGS["null-latents"].run(_ctx(tmp_path))
    assert check.verdict == verdict and check.value == pytest.approx((noised - 30) / 100)
    assert check.details["tost_accuracy"]["equivalent"] is (verdict == "no-effect")
    assert seen == {"keys": ("nocot", "codi"), "noise": True}  # mutant killed: a null that scores CODI's own latents
    seen.clear()
    monkeypatch.setattr(cv, "_rows", lambda ctx, keys, noise=False, plan=None: seen.update(keys=keys, noise=noise) or {
        "nocot": ({}, _grades(30)), "codi_full": ({"latent_hits": 0.0}, _grades(noised))})
    assert SETTINGS["null-latents-full-chain"].run(_ctx(tmp_path)).verdict == verdict
    assert seen == {"keys": ("nocot", "codi_full"), "noise": True}


def test_noise_latents_keeps_each_norm_and_draws_reproducibly():
    class Prj(torch.nn.Module):
        def latent_input(self, h):
            return 3 * h

    h = torch.randn(5, 8)
    a, b = Prj(), Prj()
    cv.noise_latents(a, 7)
    cv.noise_latents(b, 7)
    x, y = a.latent_input(h), b.latent_input(h)
    assert torch.equal(x, y) and torch.allclose(x.norm(dim=-1), (3 * h).norm(dim=-1))
    assert abs(torch.nn.functional.cosine_similarity(x, 3 * h).mean()) < 0.5  # not the latent itself
    assert not torch.equal(a.latent_input(h), x)  # a fresh draw at every latent step


@needs_zoo
@pytest.mark.slow
@pytest.mark.parametrize("setting", ["planted-serial", "planted-serial-full-chain"])
def test_quick_planted_serial(tmp_path, setting):
    check = SETTINGS[setting].run(_ctx(tmp_path))
    assert check.details["compression"] >= cv.MIN_COMPRESSION and check.n == 3 * cv.QUICK.n_per_steps
    if setting.endswith("full-chain"):  # the whole chain in the teacher: its explicit mode no longer misses the last step
        assert check.details["explicit_last_step_misses"] <= 0.05 and check.details["codi_explicit_accuracy"]["accuracy"] >= 0.9


@needs_zoo
@pytest.mark.slow
@pytest.mark.parametrize("setting", ["null-latents", "null-latents-full-chain"])
def test_quick_null_latents_fails_as_measured(tmp_path, setting):
    # measured (the null's 300 problems quick or full): the noised CODIs score 0.06 against the matched
    # No-CoT's 0.33, -0.27 [-0.31, -0.22] (90%): the noise breaks the model, far outside +-0.10, so the null fails
    check = SETTINGS[setting].run(_ctx(tmp_path))
    tost = check.details["tost_accuracy"]
    assert check.n == 3 * cv.NULL_PLAN.n_per_steps and (check.verdict == "no-effect") is tost["equivalent"], check
    assert check.verdict == "failed" and tost["ci90"][1] < -cv.NULL_MARGIN, check


@pytest.mark.parametrize("key, positions", [("coconut", 6.0), ("latent_sft", 8.0)])
def test_other_latent_methods_score_their_own_organism_without_an_explicit_mode(tmp_path, monkeypatch, key, positions):
    # the Coconut and Latent-SFT settings run the codi task and targets on their own serial organism: no explicit-CoT
    # row (no teacher side), rows named <method>_*; mutants killed: a setting scoring a CODI organism (the keys are
    # asserted), a null that keeps the latents (noise asserted), a 15-point gain read as recovered
    seen = []
    grades = {"n": 58}

    def rows(ctx, keys, noise=False, plan=None):
        seen.append((keys, noise))
        return {"nocot": ({"reasoning_positions": 0.0}, _grades(30)), "cot": ({"reasoning_positions": 48.0}, _grades(99)),
                key: ({"reasoning_positions": positions, "latent_hits": 0.2}, _grades(grades["n"]))}

    monkeypatch.setattr(cv, "_rows", rows)
    monkeypatch.setattr(cv, "_steps", lambda ctx, plan=None: [6] * 100)
    name = cv.LATENT_METHODS[key][0]
    for n, verdict in ((58, "recovered"), (45, "failed")):
        grades["n"] = n
        check = RUNS[key][0](_ctx(tmp_path))
        assert check.verdict == verdict and check.details[f"{name}_accuracy"]["accuracy"] == n / 100
        assert check.details["compression"] == 48.0 / positions and "codi_explicit_accuracy" not in check.details
        assert check.details["organisms"][key] == cv.ORGANISMS[key] and cv.LATENT_METHODS[key][1] + " at" in check.target
    assert seen[-1] == (("nocot", "cot", key), False)
    grades["n"] = 31
    check = RUNS[key][1](_ctx(tmp_path))
    assert check.verdict == "no-effect" and seen[-1] == (("nocot", key), True)
    assert check.details[f"noised_{name}_accuracy"]["accuracy"] == 0.31


@pytest.mark.skipif(zoo_path("tiny-latent-sft") is None, reason="needs the committed zoo")
def test_noise_reaches_latent_sft_latents():
    # Latent-SFT feeds its superpositions back through latent_input, so the noise null replaces them as it does a
    # continuous thought (mutant killed: infer feeding z directly, which leaves the "null" the trained model itself)
    from thinklens.latent.latent_model import load_latent_model
    from thinklens.tasks.protocol import problems_by_steps

    problems = problems_by_steps(2, 3, 4, seed=5)
    plain = load_latent_model("tiny-latent-sft").infer_problems(problems)
    lm = load_latent_model("tiny-latent-sft")
    cv.noise_latents(lm.module, 0)
    noised = lm.infer_problems(problems)
    assert [r["text"] for r in plain] != [r["text"] for r in noised]


@needs_zoo
@pytest.mark.slow
@pytest.mark.parametrize("setting", ["planted-serial", "null-latents"])
def test_quick_coconut_settings(tmp_path, setting):
    check = COCONUT[setting].run(_ctx(tmp_path))
    if setting == "null-latents":  # measured: 0.03 against the matched No-CoT's 0.33, -0.29 [-0.34, -0.25]
        assert check.n == 3 * cv.NULL_PLAN.n_per_steps and check.verdict == "failed", check
        assert check.details["tost_accuracy"]["ci90"][1] < -cv.NULL_MARGIN, check
    else:  # 6 latents against the chain's positions; too few problems for the 20-point paired verdict
        assert check.n == 3 * cv.QUICK.n_per_steps, check
        assert check.details["compression"] >= cv.MIN_COMPRESSION and check.details["coconut_positions"] == 6.0
