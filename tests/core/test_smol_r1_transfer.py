"""The transfer table (docs/real-models.md) against the raw records it is rendered from: every smol-r1
row of the real-jobs record appears once, with the verdict of its own first finding, beside the zoo run's first
finding, and 'same verdict' only where the two verdicts are equal."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "results" / "records"


def _summary() -> dict:
    return json.loads((ROOT / "results" / "smol_r1_transfer.json").read_text())["values"]


def test_every_smol_r1_job_once_with_its_own_verdict():
    jobs = json.loads((RECORDS / "real-jobs" / "jobs.json").read_text())
    mine = {r["job"]: r for r in jobs.values() if r["model"] == "smol-r1"}
    planned = json.loads((RECORDS / "real-jobs" / "meta.json").read_text()).get("plans", {}).get("smol-r1", [])
    rows = _summary()["rows"]
    assert [r["job"] for r in rows] == list(dict.fromkeys([*planned, *mine])), "one row per planned or recorded job"
    for row in rows:
        if row["job"] not in mine:
            assert row["smol_r1"] == "not run yet", row
            continue
        rec = mine[row["job"]]
        if rec["outcome"] == "ran" and rec.get("findings"):
            assert row["smol_r1"].endswith(": " + rec["findings"][0]["verdict"]), row
        else:
            assert row["smol_r1"].startswith(rec["outcome"]), row


def test_same_verdict_only_where_the_zoo_run_says_the_same():
    for row in _summary()["rows"]:
        if row["transfer"] == "-" or row["transfer"].startswith("stale"):
            continue
        zoo_verdict = row["zoo"].rsplit(": ", 1)[1]
        smol_verdict = row["smol_r1"].rsplit(": ", 1)[1]
        assert (row["transfer"] == "same verdict") == (zoo_verdict == smol_verdict), row


def test_zoo_side_is_the_closest_record_where_there_is_one():
    twins = {"mi-peaks": "tiny-r1 (record tiny-r1-mi-peaks)", "lynx": "tiny-r1 (record tiny-r1-lynx)",
             "probe": "tiny-think (record probe-readme-correct)"}
    for row in _summary()["rows"]:
        if row["job"] in twins:
            assert row["zoo_subject"] == twins[row["job"]], row


def _published(name: str) -> str:
    return json.loads((ROOT / "data" / "real-organisms" / name / "organism.json").read_text())["published"]


def test_validation_settings_beside_the_zoo_ones():
    """Each setting once per size, from the latest record that ran it; validated counts the settings with their expected
    verdict made with today's adapter (LYNX's null runs on smol-r1-once, the rest on smol-r1) by today's method code
    (the docs' stale marks). Kills: a row of a record made before its adapter was published, or of a record whose
    method's code changed since, counted as validated."""
    values = _summary()
    by_setting: dict = {}  # a later record's row of a setting at the same size replaces an earlier one's
    for name in ("validate-smol-r1-lynx", "validate-smol-r1-lynx-full", "validate-smol-r1-mi-quick",
                 "validate-smol-r1-mi-full"):
        if (run := RECORDS / name / "results" / "validate.json").is_file():
            created = json.loads((RECORDS / name / "meta.json").read_text())["created"]
            size = "quick" if json.loads((RECORDS / name / "config.json").read_text())["quick"] else "full"
            by_setting |= {(r["method"], r["setting"], size): (r, created, name) for r in json.loads(run.read_text())["rows"]}
    rows = [by_setting[k] for k in sorted(by_setting, key=lambda k: (k[0], k[1] != "planted-model", k[2]))]
    assert ([(s["method"], s["setting"], s["size"]) for s in values["settings"]]
            == [k for k in sorted(by_setting, key=lambda k: (k[0], k[1] != "planted-model", k[2]))])
    marks = {m["record"] for m in json.loads((ROOT / "results" / "stale_records.json").read_text())["values"]["records"]}
    fresh = [created >= _published("smol-r1-once" if (r["method"], r["setting"]) == ("lynx", "null-model") else "smol-r1")
             and name not in marks for r, created, name in rows]
    assert values["validated"] == sum(r["verdict"] == r["expected"] and ok for (r, _, _), ok in zip(rows, fresh))
    for s, ok in zip(values["settings"], fresh):
        assert s["smol_r1"].startswith("stale") == (not ok), s


def test_rows_made_with_a_previous_adapter_are_stale():
    """A job row recorded before the committed adapter was published compares another model: it says so, whatever its
    verdicts (kills: the transfer read from a record of the previous smol-r1)."""
    values = _summary()
    jobs = json.loads((RECORDS / "real-jobs" / "jobs.json").read_text())
    for row in values["rows"]:
        rec = jobs.get(f"smol-r1/{row['job']}")
        if rec is not None:
            assert row["transfer"].startswith("stale") == (rec.get("date", "") < values["adapter_published"]), row


def test_a_size_for_a_verdict_is_where_the_observed_difference_clears_the_interval():
    """At the size named for a 'too few samples' finding, the interval's half-width (shrunk as 1/sqrt(n) from the
    finding's own) leaves the observed difference (z(0.975) + z(0.8)) / z(0.975) half-widths from the control: the
    difference clears the interval with power 0.8. Kills: n and n' swapped, the half-width taken as the full width,
    the power's z dropped; and every row with a verdict says '-'."""
    import re
    import sys

    from scipy import stats

    sys.path.insert(0, str(ROOT / "results"))
    from organism_collectors import size_for_verdict

    f = {"verdict": "too few samples", "value": 0.5, "control_value": 0.1, "ci": [0.2, 0.8], "n": 8}
    n = int(re.search(r"n=(\d+)", size_for_verdict(f)).group(1))
    half = 0.3 * (8 / n) ** 0.5
    ratio = (0.5 - 0.1) / half
    z = stats.norm.ppf(0.975)
    assert abs(ratio - (z + stats.norm.ppf(0.8)) / z) < 0.1, (n, ratio)
    assert size_for_verdict({**f, "value": 0.1}).startswith("none")
    jobs = json.loads((RECORDS / "real-jobs" / "jobs.json").read_text())
    for row in _summary()["rows"]:
        rec = jobs.get(f"smol-r1/{row['job']}")
        first = (rec or {}).get("findings") or [None]
        if rec is None or rec["outcome"] != "ran" or first[0]["verdict"] != "too few samples":
            assert row["needs"] == "-", row
        else:
            assert row["needs"] == size_for_verdict(first[0]), row
