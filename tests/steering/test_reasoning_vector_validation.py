"""The reasoning-vector settings of ``thinklens run validate`` (quick versions: the default tier), and the
mutants they kill; the full versions are `slow`."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from thinklens import ThinklensError
from thinklens.calibration.controls import SettingContext, validate_line
from thinklens.steering import vector_validation as vv
from thinklens.zoo.registry import repo_root

pytestmark = pytest.mark.skipif(not all((repo_root() / "data" / "zoo" / m / "config.json").is_file() for m in vv.LINEAGE.values()),
                                reason="needs the committed headroom lineage (data/zoo/)")
SETTINGS = {s.name: s for s in vv.SETTINGS}


def _ctx(tmp_path, quick: bool = True) -> SettingContext:
    return SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1)


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
def test_planted_quick_is_recovered(tmp_path):
    s = SETTINGS["planted"]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)
    assert check.details["headroom"] >= vv.MIN_HEADROOM and check.value >= vv.MIN_GAIN
    assert check.details["alpha"] != 0.0 and check.n == check.details["n_select"]  # chosen on the other half
    assert [f["verdict"] for f in check.details["findings"]] == ["effect", "effect"]


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
def test_null_quick_is_no_effect(tmp_path):
    s = SETTINGS["null"]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow  # organism-level quick setting; the control mutant is killed by test_reasoning_vector_mutants.py
def test_mutant_control_equal_to_v_is_killed(tmp_path, monkeypatch):
    # Mutant: the "norm-matched random" control is v itself; v can never beat it, so the planted setting fails.
    from thinklens.steering.reasoning_vectors import ReasoningVector

    monkeypatch.setattr(ReasoningVector, "random_like", lambda self, seed: self)
    check = SETTINGS["planted"].run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.details["findings"][1]["verdict"] == "no effect"


def test_mutant_v_against_the_wrong_model_is_killed(tmp_path, monkeypatch):
    # Mutant: v taken against B (or the base) instead of the GRPO model's parent A: refused before any scoring.
    for wrong in (vv.LINEAGE["b"], vv.LINEAGE["base"]):
        monkeypatch.setitem(vv.LINEAGE, "a", wrong)
        with pytest.raises(ThinklensError, match="recorded parent"):
            SETTINGS["planted"].run(_ctx(tmp_path))


def test_null_tests_a_random_delta_of_vs_norms_not_v(tmp_path, monkeypatch):
    """Mutant killed (bench/mutants.py, "vector null: v itself under test"): the null's vector under test taken to be v.
    The sweep is recorded instead of scored (default tier: no model is scored): the vector it tests has v's per-tensor
    norms, points elsewhere than v and than the control, and its equivalence test decides the verdict."""
    import torch

    from thinklens.steering.reasoning_vectors import ReasoningVector

    g = torch.Generator().manual_seed(0)
    v = ReasoningVector({"a.weight": torch.randn(8, 8, generator=g), "b.bias": torch.randn(8, generator=g)}, "grpo - a")
    monkeypatch.setattr(vv, "lineage_vector", lambda: v)
    seen = {}

    def recorded(vector, controls, plan, seed):
        seen.update(vector=vector, controls=controls)
        outcomes = {0.0: [True, False] * 60, 1.0: [True, False] * 60, 2.0: [False, True] + [True, False] * 59}
        gain = SimpleNamespace(is_effect=False, extra={"diff": 0.0, "diff_ci": [-0.05, 0.05]}, n=60)
        return [gain], {"alpha": 1.0, "report": list(range(60)), "select": [], "control_alphas": {}}, {}, outcomes

    monkeypatch.setattr(vv, "sweep", recorded)
    monkeypatch.setattr("thinklens.calibration.findings.findings_doc", lambda fs: [])
    check = SETTINGS["null"].run(_ctx(tmp_path))
    tested, control = seen["vector"], next(iter(seen["controls"].values()))

    def flat(r):
        return torch.cat([r.delta[n].flatten() for n in sorted(r.delta)])

    for name, d in v.delta.items():
        assert float(tested.delta[name].norm()) == pytest.approx(float(d.norm()), rel=1e-5)
    assert abs(float(torch.nn.functional.cosine_similarity(flat(tested), flat(v), dim=0))) < 0.5
    assert not torch.equal(flat(tested), flat(control))
    # alpha 1 changes no problem (exact interval +-0.025 for 0 of 120, the wider one); alpha 2 changes two, which cancel
    assert check.verdict == "no-effect" and check.details["equivalent"] and check.n == 120
    assert set(check.details["tost"]) == {"1.0", "2.0"} and check.details["worst_alpha"] == 1.0
    assert check.ci == pytest.approx((-0.0247, 0.0247), abs=1e-4)
    # the same sweep where alpha 2 gains 10 points on the problems: not shown to be no effect
    recorded_gain = recorded

    def gaining(vector, controls, plan, seed):
        findings, choice, acc, outcomes = recorded_gain(vector, controls, plan, seed)
        return findings, choice, acc, {**outcomes, 2.0: [True] * 12 + outcomes[0.0][12:]}

    monkeypatch.setattr(vv, "sweep", gaining)
    assert SETTINGS["null"].run(_ctx(tmp_path)).verdict == "failed"


@pytest.mark.parametrize("headroom, zero, random, verdict", [(0.3, True, True, "recovered"), (0.3, True, False, "failed"),
                                                             (0.3, False, True, "failed"), (0.1, True, True, "failed")])
def test_planted_verdict_needs_headroom_alpha0_and_the_random_control(headroom, zero, random, verdict):
    # mutants killed: the random control not required (v beats alpha 0 but not a random delta of its norms), alpha 0
    # not required, headroom not required (the slow quick setting kills the first too, through a control equal to v)
    from types import SimpleNamespace

    assert vv.planted_verdict(headroom, SimpleNamespace(is_effect=zero), SimpleNamespace(is_effect=random)) == verdict


@pytest.mark.slow
@pytest.mark.parametrize("name", ["planted", "null"])
def test_full_settings(tmp_path, name):
    s = SETTINGS[name]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)
