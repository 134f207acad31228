"""The hybrid settings of ``thinklens run validate`` (quick versions: the default tier) and the mutants their verdict
logic kills; the full versions are `slow`."""

from __future__ import annotations

import pytest

from steering import hybrid_validation as hv
from thinklens.controls import SettingContext, validate_line
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
