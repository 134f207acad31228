"""The validate job's findings say what each setting showed: a planted setting that ran and missed its target is not
called a crash, and a null on which the method found an effect is an ``effect`` (the claim "finds an effect on its
null" holds)."""

from __future__ import annotations

from thinklens.calibration.validate import validation_findings


def _row(expected: str, verdict: str, **details) -> dict:
    return dict(method="codi", setting="s", expected=expected, statistic="gain", value=0.18, ci=[0.12, 0.25], n=300,
                verdict=verdict, target="gain >= 0.2", details=details)


def test_each_outcome_reads_as_what_happened():
    got = {(e, v, bool(d)): validation_findings([_row(e, v, **d)])[0] for e, v, d in [
        ("recovered", "recovered", {}), ("recovered", "failed", {}), ("recovered", "failed", {"error": "boom"}),
        ("no-effect", "no-effect", {}), ("no-effect", "failed", {}), ("no-effect", "failed", {"error": "boom"})]}
    verdicts = {k: f["verdict"] for k, f in got.items()}
    assert verdicts == {("recovered", "recovered", False): "effect", ("recovered", "failed", False): "no effect",
                        ("recovered", "failed", True): "no effect", ("no-effect", "no-effect", False): "no effect",
                        ("no-effect", "failed", False): "effect", ("no-effect", "failed", True): "no effect"}
    words = {k: (f.get("extra") or {}).get("otherwise", "") for k, f in got.items()}
    assert "failed to run" not in words[("recovered", "failed", False)]  # mutant killed: every miss called a crash
    assert "short of its target" in words[("recovered", "failed", False)]
    assert words[("recovered", "failed", True)] == "codi s failed to run: boom"
    assert words[("no-effect", "failed", True)] == "codi s failed to run: boom"


def test_a_setting_whose_precondition_fails_shows_neither_claim():
    # a boundary (expected no-effect) with no gap between its models is not "an effect found on the null", and a planted
    # setting without its precondition is not "short of its target"; mutant killed: the precondition flag ignored
    unmet = {"precondition_met": False, "precondition": "a gap: the thinking model beats the base"}
    for expected in ("no-effect", "recovered"):
        (f,) = validation_findings([_row(expected, "failed", **unmet)])
        assert f["verdict"] == "no effect"
        assert f["extra"]["otherwise"] == "codi s: its precondition does not hold (a gap: the thinking model beats the base)"
    (met,) = validation_findings([_row("no-effect", "failed", precondition_met=True)])
    assert met["verdict"] == "effect"
