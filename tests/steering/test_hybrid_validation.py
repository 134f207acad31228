"""The hybrid settings of ``thinklens run validate`` (quick versions: the default tier) and the mutants their verdict
logic kills; the full versions are `slow`."""

from __future__ import annotations

import pytest

from thinklens.calibration.controls import SettingContext, validate_line
from thinklens.steering import hybrid_validation as hv
from thinklens.zoo.registry import zoo_path

SETTINGS = {s.name: s for s in hv.SETTINGS}
needs_zoo = pytest.mark.skipif(any(zoo_path(m) is None for m in hv.PAIR.values()), reason="needs the committed zoo")


def _ctx(tmp_path, quick: bool = True) -> SettingContext:
    return SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1)


def _rows(base: list[int], thinking: list[int], hybrid: list[int], random: list[int]) -> dict:
    return {m: {"correct": [bool(x) for x in c], "fired_fraction": 0.1, "changed_fraction": 0.01}
            for m, c in zip(hv.MODES, (base, thinking, hybrid, random))}


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("random_right, verdict", [(0, "recovered"), (20, "failed")])
def test_planted_verdict_needs_the_hybrid_beyond_its_random_control(tmp_path, monkeypatch, random_right, verdict, quick):
    # 60 problems: the base gets 20 right, the thinking model 50, the hybrid 40 (the 20 and 20 more);
    # mutant: a random-vector control as good as the hybrid leaves the planted setting failed
    base, thinking, hybrid = [1] * 20 + [0] * 40, [1] * 50 + [0] * 10, [1] * 40 + [0] * 20
    random = [1] * 20 + [1] * random_right + [0] * (40 - random_right)
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    check = SETTINGS["planted"].run(_ctx(tmp_path, quick=quick))
    assert check.verdict == verdict and check.details["paired_test"] is not quick
    assert check.value == pytest.approx((20 - random_right) / 60)
    assert check.details["gap"] == pytest.approx(0.5) and check.details["gap_recovered"] == pytest.approx(20 / 30)


def test_planted_needs_a_gap(tmp_path, monkeypatch):
    # mutant pair: no gap (thinking no better than base), so beating the random control is not a validation
    same = [1] * 20 + [0] * 40
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(same, same, [1] * 40 + [0] * 20, same))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    assert SETTINGS["planted"].run(_ctx(tmp_path)).verdict == "failed"


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
@pytest.mark.parametrize("name", ["planted", "null"])
def test_quick_settings(tmp_path, name):
    s = SETTINGS[name]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_zoo
@pytest.mark.parametrize("name", ["planted", "null"])
def test_full_settings(tmp_path, name):
    s = SETTINGS[name]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


# ---------------------------------------------------------------- planted-behaviour (tiny-r1 / tiny-overthink)

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


@pytest.mark.parametrize("setting, pair", [("planted-behaviour", hv.BEHAVIOUR_PAIR), ("planted-latent", hv.LATENT_PAIR)])
@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("random_on, verdict", [(0, "recovered"), (30, "failed")])
def test_planted_behaviour_verdict_needs_the_hybrid_beyond_its_random_control(tmp_path, monkeypatch, random_on,
                                                                               verdict, quick, setting, pair):
    # 60 problems: base never re-checks, thinking on 50, the hybrid on 30; mutant: a random-vector control that
    # re-checks as often as the hybrid leaves the setting failed
    base, thinking, hybrid = [0] * 60, [1] * 50 + [0] * 10, [1] * 30 + [0] * 30
    random = [1] * random_on + [0] * (60 - random_on)
    seen = []
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, p, o: seen.append(p) or _brows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {"stub": p})
    check = SETTINGS[setting].run(_ctx(tmp_path, quick=quick))
    assert seen == [pair] and check.details["pair"] == pair  # each setting runs its own pair
    assert check.verdict == verdict and check.details["paired_test"] is not quick
    assert check.value == pytest.approx((30 - random_on) / 60)
    assert check.details["gap"] == pytest.approx(50 / 60)
    assert check.details["rates"]["hybrid"]["recheck_rate"] == pytest.approx(0.5)
    assert ("cue_diagnostics" in check.details) is (verdict == "failed")


def test_planted_behaviour_needs_a_gap(tmp_path, monkeypatch):
    # mutant pair: the thinking model re-checks no more than the base, so beating the random control validates nothing
    none = [0] * 60
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, pair, o: _brows(none, none, [1] * 30 + [0] * 30, none))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {})
    assert SETTINGS["planted-behaviour"].run(_ctx(tmp_path)).verdict == "failed"


@pytest.fixture(scope="module")
def quick_behaviour(tmp_path_factory):
    s = SETTINGS["planted-behaviour"]
    return s, s.run(_ctx(tmp_path_factory.mktemp("behaviour")))


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_behaviour_zoo
def test_quick_planted_behaviour_gap(quick_behaviour):
    # the planted gap itself: tiny-overthink re-checks on (almost) every problem, tiny-r1 on (almost) none
    s, check = quick_behaviour
    rates = check.details["rates"]
    assert rates["thinking"]["recheck_rate"] >= 0.75 and rates["base"]["recheck_rate"] <= 0.25, validate_line(s, check)


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_behaviour_zoo
@pytest.mark.xfail(strict=True, reason="the guardrail keeps only tokens the unsteered base finds plausible (>= 1e-3); "
                   "where tiny-overthink opens a round (' Wait') tiny-r1 gives it ~1e-5, so no vector can emit it "
                   "(details['cue_diagnostics'])")
def test_quick_planted_behaviour(quick_behaviour):
    s, check = quick_behaviour
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_behaviour_zoo
@pytest.mark.xfail(strict=True, reason="full run (results/records/validate-hybrid-behaviour): hybrid 0/100 re-checks, "
                   "random 0/100; the steered base never proposes ' Wait' (module docstring)")
def test_full_planted_behaviour(tmp_path):
    s = SETTINGS["planted-behaviour"]
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
