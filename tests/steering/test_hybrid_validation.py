"""The hybrid settings of ``thinklens run validate`` (quick versions: the default tier) and the mutants their verdict
logic kills; the full versions are `slow`."""

from __future__ import annotations

import pytest

from thinklens.calibration.controls import SettingContext, validate_line
from thinklens.steering import hybrid_behaviour as hb
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
@pytest.mark.parametrize("random_right, verdict", [(20, "failed"), (18, "failed"), (0, "recovered")])
def test_skill_gap_is_planted_and_fails_when_random_vectors_do_as_well(tmp_path, monkeypatch, random_right, verdict, quick):
    # 60 problems: the base gets 20 right, the thinking model 50, the hybrid 40 (the 20 and 20 more). A random-vector
    # control as good as the hybrid fails the planted setting; 2 problems short of it (McNemar p=0.5) fails too, quick
    # or full (mutant killed: judged by direction alone, which the quick version did: "recovered" at +0.05 [-0.049,
    # 0.108]); 20 short (p=2e-6) is recovered. The setting was once relabelled "boundary" (expected no-effect)
    # after failing as planted; it is planted again and fails honestly, with why.
    base, thinking, hybrid = [1] * 20 + [0] * 40, [1] * 50 + [0] * 10, [1] * 40 + [0] * 20
    random = [1] * 20 + [1] * random_right + [0] * (40 - random_right)
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    s = SETTINGS["skill-gap"]
    check = s.run(_ctx(tmp_path, quick=quick))
    assert s.expected == "recovered" and s.kind == "planted"
    assert check.verdict == verdict
    assert check.value == pytest.approx((20 - random_right) / 60, abs=1e-6)  # values rounded to 6 places
    assert check.details["gap"] == pytest.approx(0.5) and check.details["gap_recovered"] == pytest.approx(20 / 30)
    assert check.details["precondition_met"] and check.details["over_base"] == pytest.approx(1 / 3)
    assert ("why" in check.details) is (verdict == "failed")
    if verdict == "failed":
        assert check.details["why"].startswith("the hybrid does not beat its random-vector control")
    lo, hi = check.ci  # McNemar's own interval: it contains 0 exactly when the test is not significant
    assert (lo > 0) is (check.details["beats_random_p"] < 0.05)


def test_skill_gap_as_measured_fails_and_its_interval_agrees_with_its_test(tmp_path, monkeypatch):
    # the full run's numbers (n=200): base 87, thinking 164, hybrid 95, random 89 right; the hybrid alone right on 8
    # problems, the control alone on 2: McNemar p=0.11, so failed, and the difference interval is the test's own
    # (it held the paired bootstrap's [0.005, 0.06], which excluded 0 beside p=0.11)
    base = [1] * 87 + [0] * 113
    thinking = [1] * 164 + [0] * 36
    random = [1] * 87 + [1] * 2 + [0] * 111
    hybrid = [1] * 87 + [0] * 2 + [1] * 8 + [0] * 103
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    check = SETTINGS["skill-gap"].run(_ctx(tmp_path, quick=False))
    assert check.verdict == "failed" and check.details["beats_random_p"] == pytest.approx(0.109375)
    assert check.value == pytest.approx(0.03) and check.ci[0] < 0 < check.ci[1]
    assert "(McNemar p=0.1094)" in check.details["why"]


def test_skill_gap_needs_a_gap(tmp_path, monkeypatch):
    # mutant pair: no gap (thinking no better than base): the hybrid matching its control then shows nothing
    same = [1] * 20 + [0] * 40
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(same, same, same, same))
    monkeypatch.setattr(hv, "vector_diagnostics", lambda ctx, sub: {})
    check = SETTINGS["skill-gap"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["precondition_met"] is False
    assert check.details["why"].startswith("no gap to recover")


LIVE = {"shift": 0.4, "tv": 1e-5, "top_changed": 0.0, "min_reach": 0.01}


def test_null_uses_one_model_twice_and_passes_by_equivalence(tmp_path, monkeypatch):
    seen = []

    def fake(ctx, plan, b, t, sub):
        seen.append((b, t))
        c = [1] * 40 + [0] * 40
        return _rows(c, c, c, c)

    monkeypatch.setattr(hv, "_hybrid", fake)
    monkeypatch.setattr(hv, "_reach", lambda ctx, sub: LIVE)
    s = SETTINGS["null"]
    check = s.run(_ctx(tmp_path))
    assert s.kind == "null" and seen == [(hv.PAIR["base"], hv.PAIR["base"])]
    assert check.verdict == "no-effect" and check.value == 0.0 and check.details["equivalence"]["equivalent"]
    assert check.details["margin"] == hv.NULL_MARGIN == 0.05 and check.statistic == "accuracy_vs_base"
    # no problem changed: the exact bound on the share that could change unseen, 1 - 0.025^(1/80)
    assert check.ci[1] == pytest.approx(1 - 0.025 ** (1 / 80)) and hv.QUICK_NULL.n_eval == 80


def test_null_with_too_few_problems_cannot_pass(tmp_path, monkeypatch):
    # 60 problems, none changed: 1 - 0.025^(1/60) = 0.060 could change unseen, beyond the margin: not shown
    c = [1] * 30 + [0] * 30
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(c, c, c, c))
    monkeypatch.setattr(hv, "_reach", lambda ctx, sub: LIVE)
    check = SETTINGS["null"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["why"].startswith("not shown within +-0.05")


@pytest.mark.parametrize("swaps, gained, verdict", [
    (0, 8, "failed"),  # +10 points: an effect, outside the margin
    (3, 0, "failed"),  # hybrid = base in accuracy (McNemar p=1), 6 problems changed: not shown inside +-0.05
    (1, 0, "no-effect"),  # 2 problems changed, one each way: the 95% interval [-0.035, 0.035] is inside +-0.05
    (0, 0, "no-effect"),
])
def test_null_passes_only_inside_its_margin_not_by_non_significance(tmp_path, monkeypatch, swaps, gained, verdict):
    # the base right on 40 of 80; the hybrid loses `swaps` of them and gains `swaps + gained` others: passing by a
    # non-significant difference is not a pass
    base = [1] * 40 + [0] * 40
    hybrid = [1] * (40 - swaps) + [0] * swaps + [1] * (swaps + gained) + [0] * (40 - swaps - gained)
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(base, base, hybrid, base))
    monkeypatch.setattr(hv, "_reach", lambda ctx, sub: LIVE)
    check = SETTINGS["null"].run(_ctx(tmp_path))
    eq = check.details["equivalence"]
    assert check.verdict == verdict, (check.ci, check.details.get("why"))
    assert (check.ci[0] > -hv.NULL_MARGIN and check.ci[1] < hv.NULL_MARGIN) is (verdict == "no-effect")
    assert eq["equivalent"] is (verdict == "no-effect") and check.value == pytest.approx(gained / 80)
    assert ("why" in check.details) is (verdict == "failed")
    if swaps == 3:
        assert check.details["findings"][0]["p"] == pytest.approx(1.0)  # not significant, and still not a pass
        assert check.details["why"].startswith("not shown within +-0.05")


def test_null_fails_for_an_inert_method(tmp_path, monkeypatch):
    # vectors that change nothing would pass "hybrid = base" on the null trivially: the null needs them to move the base
    c = [1] * 40 + [0] * 40
    monkeypatch.setattr(hv, "_hybrid", lambda ctx, plan, b, t, sub: _rows(c, c, c, c))
    monkeypatch.setattr(hv, "_reach", lambda ctx, sub: {**LIVE, "shift": 0.0, "tv": 0.0})
    check = SETTINGS["null"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["equivalence"]["equivalent"]
    assert "do not move the base model" in check.details["why"]


@needs_zoo
def test_null_end_to_end_on_the_zoo(tmp_path, monkeypatch):
    """The null setting for real (the hybrid job on tiny-cot-short twice, 4 problems, in seconds): the hybrid equals
    the base (steering never fires) and the trained vectors move the base (reach through the generation's own steering
    path). With 4 problems the equivalence cannot be shown (0 of 4 changed bounds the share at 1 - 0.025^(1/4) = 0.60),
    so the verdict is failed for that reason alone; the quick (80 problems) and full runs are the slow tier's. Mutants
    killed: "inert vectors: the steering hook adds nothing" and "inert vectors: never trained (zero)"
    (bench/mutants.py), whose hybrid also equals the base and used to pass this null."""
    from thinklens.steering.hybrid_generate import MIN_REACH

    monkeypatch.setattr(hv, "QUICK_NULL", hv.Plan(n_eval=4, n_train=6, sae_steps=10, vector_iters=2))
    check = SETTINGS["null"].run(_ctx(tmp_path))
    acc, reach, eq = check.details["accuracy"], check.details["reach"], check.details["equivalence"]
    assert acc["hybrid"]["fired_fraction"] == 0.0 and acc["hybrid"]["accuracy"] == acc["base"]["accuracy"]
    assert reach["shift"] >= MIN_REACH and reach["moves_the_base"], reach
    assert eq["diff"] == 0.0 and eq["ci"][1] == pytest.approx(1 - 0.025 ** (1 / 4)) and not eq["equivalent"]
    assert check.verdict == "failed" and check.details["why"].startswith("not shown within +-0.05")
    assert "do not move the base" not in check.details["why"], validate_line(SETTINGS["null"], check)


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_zoo
def test_quick_null(tmp_path):
    s = SETTINGS["null"]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_zoo
def test_quick_skill_gap_verdict_is_what_its_numbers_say(tmp_path):
    # measured (60 problems): +0.05 [-0.049, 0.108] against the random-vector control, McNemar not significant: failed
    s = SETTINGS["skill-gap"]
    check = s.run(_ctx(tmp_path))
    assert check.details["precondition_met"], validate_line(s, check)
    assert (check.verdict == "recovered") is (check.ci[0] > 0), (validate_line(s, check), check.details.get("why"))


@pytest.mark.slow
@needs_zoo
def test_full_null(tmp_path):
    s = SETTINGS["null"]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_zoo
def test_full_skill_gap_fails_as_measured(tmp_path):
    # measured (n=200): the hybrid beats its random-vector control on 8 problems against 2 (McNemar p=0.11): failed
    s = SETTINGS["skill-gap"]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.details["gap_p"] < 0.05 and check.verdict == "failed", validate_line(s, check)
    assert check.details["why"].startswith("the hybrid does not beat its random-vector control")


# ---------------------------------------------------------------- behaviour pairs (tiny-r1 or tiny-r1-sometimes / tiny-overthink)

needs_behaviour_zoo = pytest.mark.skipif(any(zoo_path(m) is None for m in hv.BEHAVIOUR_PAIR.values()),
                                         reason="needs the committed zoo")


def _brows(base: list[int], thinking: list[int], hybrid: list[int], random: list[int]) -> dict:
    return {m: {"recheck": [bool(x) for x in c], "correct": [True] * len(c), "texts": ["t"] * len(c),
                "fired_fraction": 0.1, "changed_fraction": 0.01}
            for m, c in zip(hb.BEHAVIOUR_MODES, (base, thinking, hybrid, random))}


def test_rechecks_reads_rounds_from_text():
    # oracle: thinklens.zoo.overthink's renderer writes exactly `rounds` re-check rounds; tiny-r1's own "Wait," / "Hmm,"
    # corrections (cue words without a round) are not re-checks
    from thinklens.tasks import Problem, Step
    from thinklens.zoo.overthink import overthink_reasoning

    p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7), Step("*", 7, 2, 14)))
    texts = [overthink_reasoning(p, rounds=r) for r in range(4)]
    r1 = "Okay, Ann has 3 cards. First, so 3 + 4 = 8. Wait, 3 + 4 = 7. Hmm, then 7 * 2 = 14. So Ann has 14 cards."
    assert hb.rechecks([*texts, r1 + "\n</think>\n\nWait, let me double-check."]) == [False, True, True, True, False]


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
    assert check.verdict == verdict
    assert check.value == pytest.approx((30 - random_on) / 60)
    assert check.details["gap"] == pytest.approx(50 / 60)
    assert check.details["rates"]["hybrid"]["recheck_rate"] == pytest.approx(0.5)
    assert ("cue_diagnostics" in check.details) is (verdict == "failed")
    cost = check.details["accuracy_cost"]  # every row correct here: no accuracy cost, and it is in the target line
    assert cost["diff"] == 0.0 and cost["test"] == "mcnemar" and "accuracy cost, hybrid minus base: 0 [" in check.target


def test_planted_latent_reports_its_accuracy_cost(tmp_path, monkeypatch):
    # measured: the hybrid re-checks on 100/100 against 0/100, and its accuracy falls from 1.00 to 0.45 (its rounds
    # miscopy): recovered, with the cost in the check (a planted strength's cost is part of its verdict)
    base, thinking, hybrid, random = [0] * 100, [1] * 100, [1] * 100, [0] * 100
    rows = _brows(base, thinking, hybrid, random)
    rows["hybrid"]["correct"] = [True] * 45 + [False] * 55
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, p, o: rows)
    s = SETTINGS["planted-latent"]
    check = s.run(_ctx(tmp_path, quick=False))
    cost = check.details["accuracy_cost"]
    assert check.verdict == "recovered" and cost["diff"] == pytest.approx(-0.55) and cost["ci"][1] < 0
    assert cost["hybrid"] == pytest.approx(0.45) and cost["base"] == 1.0 and cost["bound"] is None
    assert "accuracy cost, hybrid minus base: -0.55 [" in check.target and "8x the job's default" in s.help


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("hybrid_on, verdict", [(0, "failed"), (2, "failed"), (30, "recovered")])
def test_absent_behaviour_is_planted_and_fails_when_the_hybrid_does_not_recheck(tmp_path, monkeypatch, hybrid_on,
                                                                                verdict, quick):
    # the base never re-checks, the thinking model on 50 of 60 problems, the random control on none: a hybrid that
    # re-checks on none fails; on 2 (McNemar p=0.5) fails, quick or full; on 30 (p=2e-9) recovered. The
    # setting was once relabelled "boundary" (expected no-effect) after failing as planted; it is planted again, fails
    # honestly with why, and keeps its cue diagnostics when it fails.
    base, thinking, random = [0] * 60, [1] * 50 + [0] * 10, [0] * 60
    hybrid = [1] * hybrid_on + [0] * (60 - hybrid_on)
    seen = []
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, p, o: seen.append(p) or _brows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {"stub": p})
    s = SETTINGS["absent-behaviour"]
    check = s.run(_ctx(tmp_path, quick=quick))
    assert s.expected == "recovered" and s.kind == "planted" and seen == [hv.BEHAVIOUR_PAIR]
    assert check.verdict == verdict and check.value == pytest.approx(hybrid_on / 60, abs=1e-6)
    assert check.details["precondition_met"]
    if verdict == "failed":
        assert check.details["cue_diagnostics"] == {"stub": HybridConfig.min_base_prob}
        assert check.details["why"].startswith("the hybrid does not beat its random-vector control: re-check rate")
    else:
        assert "cue_diagnostics" not in check.details and "why" not in check.details


def test_absent_behaviour_needs_a_gap(tmp_path, monkeypatch):
    # mutant pair: the thinking model re-checks no more than the base: nothing to recover
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
    # measured: the planted setting fails (the hybrid never re-checks), and says why
    assert check.verdict == "failed" and rates["hybrid"]["recheck_rate"] == 0.0, (validate_line(s, check), rates)
    assert check.details["why"].startswith("the hybrid does not beat its random-vector control")


@pytest.mark.slow
@needs_behaviour_zoo
def test_full_absent_behaviour(tmp_path):
    s = SETTINGS["absent-behaviour"]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.details["rates"]["thinking"]["recheck_rate"] >= 0.9 and check.details["gap_p"] < 0.05
    # measured (n=100): hybrid 0/100 against random 0/100: the planted behaviour is not recovered
    assert check.verdict == "failed", (validate_line(s, check), check.details)


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@pytest.mark.skipif(any(zoo_path(m) is None for m in hv.LATENT_PAIR.values()), reason="needs the committed zoo")
def test_quick_planted_latent(tmp_path):
    s = SETTINGS["planted-latent"]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details["rates"])
    assert check.details["rates"]["random_vectors"]["recheck_rate"] == 0.0


def test_every_quick_plan_can_reach_a_verdict(tmp_path, monkeypatch):
    """Fewer problems than the paired tests' minimum makes every finding "too few samples", so a planted setting could
    never be recovered (the behaviour settings' quick plans once evaluated 8): each quick plan evaluates at least
    MIN_N, and a setting below it fails saying so."""
    from thinklens.calibration.findings import MIN_N

    assert all(p.n_eval >= MIN_N for p in (hv.QUICK, hv.QUICK_NULL, hv.QUICK_BEHAVIOUR, hv.QUICK_LATENT))
    base, thinking, hybrid, random = [0] * 8, [1] * 8, [1] * 8, [0] * 8
    monkeypatch.setattr(hv, "behaviour_rows", lambda ctx, plan, sub, p, o: _brows(base, thinking, hybrid, random))
    monkeypatch.setattr(hv, "cue_diagnostics", lambda ctx, rows, p, pair: {})
    check = SETTINGS["planted-latent"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["why"] == f"too few problems to test: 8 (at least {MIN_N})"
