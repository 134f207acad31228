"""The committed mutant table (results/mutants.json, written by ``python -m bench.mutants``) matches the mutants
bench/mutants.py defines, each mutant still applies to the code (its text occurs once), every one is killed, and
its killing test exists. Running the mutants takes minutes (each runs its test files): that is the bench, not
this test."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    from bench import mutants

    return mutants


def test_every_mutant_still_applies_to_the_code():
    for m in _bench().MUTANTS:
        count = (ROOT / m.path).read_text().count(m.old)
        assert count == 1, f"mutant {m.name!r}: its text occurs {count} times in {m.path} (update bench/mutants.py)"
        files = [t for i, t in enumerate(m.tests) if not t.startswith("-") and (i == 0 or m.tests[i - 1] != "-k")]
        assert files and all((ROOT / t.split("::")[0]).is_file() for t in files), m.tests  # -k's expression is no file


def test_the_committed_table_is_the_defined_mutants_all_killed():
    table = json.loads((ROOT / "results" / "mutants.json").read_text())["values"]
    defined = _bench().MUTANTS
    assert [r["name"] for r in table["mutants"]] == [m.name for m in defined], "rerun python -m bench.mutants"
    assert {r["name"]: r["tests"] for r in table["mutants"]} == {m.name: list(m.tests) for m in defined}
    assert table["survivors"] == [] and table["not_run"] == [] and table["killed"] == table["total"] == len(defined)
    for r in table["mutants"]:
        assert r["killed"] and r["killed_by"].split("::")[0] in {t.split("::")[0] for t in r["tests"]}, r
