"""The reasoning precondition of ``validate --model M`` (thinklens/zoo/reasons.py) on the zoo's R1 organisms, whose
behaviour is known by construction: tiny-overthink reasons and re-checks after its answer, tiny-r1 reasons and
concludes once, tiny-pre writes no R1 format at all."""

from __future__ import annotations

import pytest

from thinklens.engine.model import HookedModel
from thinklens.zoo.reasons import measure, refusal


@pytest.fixture(scope="module")
def tallies():
    return {name: measure(HookedModel.load(name), seed=0) for name in ("tiny-overthink", "tiny-r1")}


def test_an_organism_that_re_checks_meets_both_preconditions(tallies):
    t = tallies["tiny-overthink"]
    assert t["opens_think"] and t["right"] >= 6 and t["rechecked"] >= 6
    assert refusal(t, method="lynx", rechecks=True) is None and refusal(t, method="mi-peaks", rechecks=False) is None


def test_an_organism_that_concludes_once_is_refused_by_lynx_only(tallies):
    """Mutant killed: re-checks not asked (tiny-r1 would be run by LYNX's planted setting, which it cannot pass)."""
    t = tallies["tiny-r1"]
    assert t["opens_think"] and t["right"] >= 6 and t["rechecked"] == 0
    assert refusal(t, method="mi-peaks", rechecks=False) is None
    line = refusal(t, method="lynx", rechecks=True)
    assert line == (f"tiny-r1 answers {t['right']} of 8 held-out problems in the R1 format, re-checks after its answer "
                    "in 0: lynx needs a model that reasons and re-checks after its answer (at least 6 of 8); try smol-r1")


def test_a_model_that_does_not_reason_is_refused():
    t = {"model": "smollm2-135m", "n": 8, "right": 5, "rechecked": 5, "opens_think": True}
    assert refusal(t, method="mi-peaks", rechecks=False).startswith("smollm2-135m answers 5 of 8")
