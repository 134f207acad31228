"""The hybrid settings of ``thinklens run validate`` (quick versions: the default tier) and the mutants their verdict
logic kills; the full versions are `slow`."""

from __future__ import annotations

import pytest

from thinklens.calibration.controls import SettingContext, validate_line
from thinklens.steering import hybrid_validation as hv
from thinklens.steering.configs import HybridConfig
from thinklens.zoo.registry import zoo_path

SETTINGS = {s.name: s for s in hv.SETTINGS}
needs_zoo = pytest.mark.skipif(any(zoo_path(m) is None for m in hv.PAIR.values()), reason="needs the committed zoo")


def _ctx(tmp_path, quick: bool = True) -> SettingContext:
    return SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1)


def _rows(base: list[int], thinking: list[int], hybrid: list[int], random: list[int]) -> dict:
    return {m: {"correct": [bool(x) for x in c], "fired_fraction": 0.1, "changed_fraction": 0.01}
            for m, c in zip(hv.MODES, (base, thinking, hybrid, random))}


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("random_right, verdict", [(20, "no-effect"), (18, "no-effect"), (0, "failed")])
def test_skill_gap_is_a_boundary_the_vectors_must_not_cross(tmp_path, monkeypatch, random_right, verdict, quick):
    # 60 problems: the base gets 20 right, the thinking model 50, the hybrid 40 (the 20 and 20 more). A random-vector
    # control as good as the hybrid, or 2 problems short of it (McNemar p=0.5), is the expected no-effect; 20 short
    # (p=2e-6) is an effect of the vectors' direction, which a skill gap should not show. Mutants killed: the boundary
    # judged by direction alone (the 2-problem case would fail), the boundary expecting recovery (the 20-problem case).
    base, thinking, hybrid = [1] * 20 + [0] * 40, [1] * 50 + [0] * 10, [1] * 40 + [0] * 20
    random = [1] * 20 + [1] * random_right + [0] * (40 - random_right)
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    check = SETTINGS["skill-gap"].run(_ctx(tmp_path, quick=quick))
    assert SETTINGS["skill-gap"].expected == "no-effect"
    assert check.verdict == verdict and check.details["paired_test"] is not quick
    assert check.value == pytest.approx((20 - random_right) / 60, abs=1e-6)  # values rounded to 6 places
    assert check.details["gap"] == pytest.approx(0.5) and check.details["gap_recovered"] == pytest.approx(20 / 30)
    assert check.details["precondition_met"] and check.details["over_base"] == pytest.approx(1 / 3)


def test_skill_gap_needs_a_gap(tmp_path, monkeypatch):
    # mutant pair: no gap (thinking no better than base): the hybrid matching its control then shows nothing
    same = [1] * 20 + [0] * 40
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(same, same, same, same))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    check = SETTINGS["skill-gap"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["precondition_met"] is False


def test_null_uses_one_model_twice(tmp_path, monkeypatch):
    seen = []

    def fake(ctx, plan, b, t, sub):
        seen.append((b, t))
        c = [1] * 30 + [0] * 30
        return _rows(c, c, c, c)

    monkeypatch.setattr(hv, "_hybrid", fake)
    check = SETTINGS["null"].run(_ctx(tmp_path))
    assert seen == [(hv.PAIR["base"], hv.PAIR["base"])] and check.verdict == "no-effect" and check.value == 0.0


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_zoo
@pytest.mark.parametrize("name", ["skill-gap", "null"])
def test_quick_settings(tmp_path, name):
    s = SETTINGS[name]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_zoo
@pytest.mark.parametrize("name", ["skill-gap", "null"])
def test_full_settings(tmp_path, name):
    s = SETTINGS[name]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


# ---------------------------------------------------------------- behaviour pairs (tiny-r1 or tiny-r1-sometimes / tiny-overthink)

needs_behaviour_zoo = pytest.mark.skipif(any(zoo_path(m) is None for m in hv.BEHAVIOUR_PAIR.values()),
                                         reason="needs the committed zoo")


def _brows(base: list[int], thinking: list[int], hybrid: list[int], random: list[int]) -> dict:
    return {m: {"recheck": [bool(x) for x in c], "correct": [True] * len(c), "texts": ["t"] * len(c),
                "fired_fraction": 0.1, "changed_fraction": 0.01}
            for m, c in zip(hv.BEHAVIOUR_MODES, (base, thinking, hybrid, random))}


def test_rechecks_reads_rounds_from_text():
    # oracle: thinklens.zoo.overthink's renderer writes exactly `rounds` re-check rounds; tiny-r1's own "Wait," / "Hmm,"
    # corrections (cue words without a round) are not re-checks
    from thinklens.tasks import Problem, Step
    from thinklens.zoo.overthink import overthink_reasoning

    p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7), Step("*", 7, 2, 14)))
    texts = [overthink_reasoning(p, rounds=r) for r in range(4)]
    r1 = "Okay, Ann has 3 cards. First, so 3 + 4 = 8. Wait, 3 + 4 = 7. Hmm, then 7 * 2 = 14. So Ann has 14 cards."
    assert hv.rechecks([*texts, r1 + "\n</think>\n\nWait, let me double-check."]) == [False, True, True, True, False]


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("random_on, verdict", [(0, "recovered"), (30, "failed")])
def test_planted_latent_verdict_needs_the_hybrid_beyond_its_random_control(tmp_path, monkeypatch, random_on, verdict, quick):
    # 60 problems: base never re-checks, thinking on 50, the hybrid on 30; mutant: a random-vector control that
    # re-checks as often as the hybrid leaves the setting failed
    base, thinking, hybrid = [0] * 60, [1] * 50 + [0] * 10, [1] * 30 + [0] * 30
    random = [1] * random_on + [0] * (60 - random_on)
    seen = []
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, p, o: seen.append(p) or _brows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {"stub": p})
    check = SETTINGS["planted-latent"].run(_ctx(tmp_path, quick=quick))
    assert seen == [hv.LATENT_PAIR] and check.details["pair"] == hv.LATENT_PAIR  # the setting runs its own pair
    assert check.verdict == verdict and check.details["paired_test"] is not quick
    assert check.value == pytest.approx((30 - random_on) / 60)
    assert check.details["gap"] == pytest.approx(50 / 60)
    assert check.details["rates"]["hybrid"]["recheck_rate"] == pytest.approx(0.5)
    assert ("cue_diagnostics" in check.details) is (verdict == "failed")


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("hybrid_on, verdict", [(0, "no-effect"), (2, "no-effect"), (30, "failed")])
def test_absent_behaviour_is_a_boundary(tmp_path, monkeypatch, hybrid_on, verdict, quick):
    # the base never re-checks, the thinking model on 50 of 60 problems, the random control on none: a hybrid that
    # re-checks on none or 2 (McNemar p=0.5) is the expected no-effect; on 30 (p=2e-9) it would have made the base do
    # what it cannot, and the setting fails. Mutants killed: the boundary judged by direction alone (2 would fail), the
    # boundary run on the planted-latent pair (the pair check), the cue diagnostics dropped on the expected outcome.
    base, thinking, random = [0] * 60, [1] * 50 + [0] * 10, [0] * 60
    hybrid = [1] * hybrid_on + [0] * (60 - hybrid_on)
    seen = []
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, p, o: seen.append(p) or _brows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {"stub": p})
    s = SETTINGS["absent-behaviour"]
    check = s.run(_ctx(tmp_path, quick=quick))
    assert s.expected == "no-effect" and seen == [hv.BEHAVIOUR_PAIR]
    assert check.verdict == verdict and check.value == pytest.approx(hybrid_on / 60, abs=1e-6)
    assert check.details["precondition_met"] and check.details["cue_diagnostics"] == {"stub": HybridConfig.min_base_prob}


def test_absent_behaviour_needs_a_gap(tmp_path, monkeypatch):
    # mutant pair: the thinking model re-checks no more than the base, so "no more than random" shows nothing
    none = [0] * 60
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, pair, o: _brows(none, none, none, none))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {})
    check = SETTINGS["absent-behaviour"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["precondition_met"] is False


@pytest.fixture(scope="module")
def quick_behaviour(tmp_path_factory):
    s = SETTINGS["absent-behaviour"]
    return s, s.run(_ctx(tmp_path_factory.mktemp("behaviour")))


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_behaviour_zoo
def test_quick_absent_behaviour(quick_behaviour):
    # the gap itself: tiny-overthink re-checks on (almost) every problem, tiny-r1 on (almost) none; the hybrid cannot
    # make tiny-r1 open a round: the guardrail keeps only tokens the unsteered base finds plausible (>= 1e-3), and
    # where tiny-overthink opens one tiny-r1 gives ' Wait' ~1e-5 (details['cue_diagnostics'])
    s, check = quick_behaviour
    rates = check.details["rates"]
    assert rates["thinking"]["recheck_rate"] >= 0.75 and rates["base"]["recheck_rate"] <= 0.25, validate_line(s, check)
    assert check.verdict == s.expected and rates["hybrid"]["recheck_rate"] == 0.0, (validate_line(s, check), rates)


@pytest.mark.slow
@needs_behaviour_zoo
def test_full_absent_behaviour(tmp_path):
    s = SETTINGS["absent-behaviour"]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.details["rates"]["thinking"]["recheck_rate"] >= 0.9 and check.details["gap_p"] < 0.05
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@pytest.mark.skipif(any(zoo_path(m) is None for m in hv.LATENT_PAIR.values()), reason="needs the committed zoo")
def test_quick_planted_latent(tmp_path):
    s = SETTINGS["planted-latent"]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details["rates"])
    assert check.details["rates"]["random_vectors"]["recheck_rate"] == 0.0
