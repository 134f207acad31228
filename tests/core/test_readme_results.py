"""Every number in a README results block equals the committed summary (results/NAME.json) the block names.

A block starts with a line ``<!-- results: results/NAME.json -->`` and ends with ``<!-- /results -->``; the
summaries are written by ``python results/collect.py NAME`` from the run folders (see
:mod:`thinklens.readme_results` for the matching rules).
"""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.readme_results import blocks, problems, unmatched

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_has_results_blocks():
    assert blocks(README), "README.md has no `<!-- results: results/NAME.json -->` block"


def test_every_readme_number_is_in_its_summary():
    found = problems(README, ROOT)
    assert not found, "\n".join(found)


def test_summaries_are_small():
    for name, _ in blocks(README):
        size = (ROOT / name).stat().st_size
        assert size < 50_000, f"{name} is {size} bytes: prune per-item arrays in results/collect.py"


def test_missing_summary_is_a_clear_failure(tmp_path):
    text = "intro 3\n<!-- results: results/gone.json -->\n| m | 0.5 |\n<!-- /results -->\n"
    assert problems(text, tmp_path) == ["results block 1 names results/gone.json, which does not exist: "
                                        "write it with `python results/collect.py gone`"]


def test_a_drifted_number_is_reported(tmp_path):
    (tmp_path / "results").mkdir()
    summary = {"command": "thinklens run x", "date": "2026-11-30", "source": "runs/x/1", "config": {"n": 60},
               "values": {"acc": {"1": 0.9833}, "share": 0.127}}
    (tmp_path / "results" / "s.json").write_text(json.dumps(summary))
    ok = "<!-- results: results/s.json -->\n60 problems, 1 step: 0.983, 12.7% (`--k 3`)\n<!-- /results -->\n"
    assert problems(ok, tmp_path) == []
    drifted = ok.replace("0.983", "0.985")
    assert unmatched(blocks(drifted)[0][1], summary) == ["0.985"]
    assert "0.985 not in its summary" in problems(drifted, tmp_path)[0]


def test_incomplete_summary_and_unclosed_block_are_reported(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "s.json").write_text(json.dumps({"command": "x", "date": "2026-11-30", "values": {}}))
    text = "<!-- results: results/s.json -->\n1\n<!-- /results -->\n<!-- results: results/t.json -->\n2\n"
    found = problems(text, tmp_path)
    assert "2 results blocks open but 1 are closed" in found[0]
    assert "lacks a non-empty source, config, values" in found[1]
