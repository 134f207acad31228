"""Every results block of README.md and docs/*.md is its template rendered from the committed summary it names,
every quoted number a named field of that summary; no measured number sits outside the blocks.

A block starts with ``<!-- results: results/NAME.json template: results/readme/ID.md -->`` and ends with
``<!-- /results -->``; the summaries are written by ``python results/collect.py NAME`` from the run folders (see
:mod:`tools.readme_results` for the template holes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.readme_results import (
    TemplateError,
    all_blocks,
    check_files,
    checked_files,
    field,
    fields_of,
    mutation_sweep,
    outside_numbers,
    problems,
    render,
    sweep_files,
    write,
    write_files,
)

ROOT = Path(__file__).resolve().parents[2]
PAGES = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in checked_files(ROOT)}
#: Every template of every page's blocks (the moved blocks live in docs/results.md).
TEMPLATES = {b.template: (ROOT / b.template).read_text() for _, b in all_blocks(ROOT)}


def test_the_pages_have_results_blocks_each_with_a_template():
    assert "README.md" in PAGES and "docs/results.md" in PAGES, sorted(PAGES)
    found = all_blocks(ROOT)
    assert len(found) >= 25, "the docs lost results blocks: " + ", ".join(f"{page}: {b.template}" for page, b in found)
    assert all(b.template for _, b in found)
    # every template of results/readme/ is quoted by some page (a block was not dropped in the move)
    unused = {str(p.relative_to(ROOT)) for p in (ROOT / "results" / "readme").glob("*.md")} - set(TEMPLATES)
    assert not unused, f"templates no page quotes: {sorted(unused)}"


def test_every_block_is_its_template_rendered_from_its_summary():
    found = check_files(ROOT)
    assert not found, "\n".join(found)


def test_changing_any_digit_of_any_block_number_is_flagged():
    """The mutation sweep over README.md and docs/*.md: the last digit of every number (every run of digits) of every
    block, +-1, one at a time."""
    flagged, total, survivors = sweep_files(ROOT)
    assert total > 1500, total  # every block's numbers, tables, prose, inline name=value, 4.1x and +- forms
    assert flagged == total, "\n".join(survivors[:20])
    # the sweep covers every page: its total is the sum of the pages' own sweeps
    assert total == sum(mutation_sweep(text, ROOT)[1] for text in PAGES.values())


def test_a_drifted_number_in_a_docs_page_is_reported_with_its_page(tmp_path):
    _summary_dir(tmp_path, {"acc": 0.5}, "acc {{values.acc|.2f}}\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# x\n")
    block = "<!-- results: results/s.json template: results/readme/s.md -->\nacc 0.50\n<!-- /results -->\n"
    (tmp_path / "docs" / "results.md").write_text(block)
    assert check_files(tmp_path) == [] and sweep_files(tmp_path) == (2, 2, [])  # the runs of digits "0" and "50"
    (tmp_path / "docs" / "results.md").write_text(block.replace("0.50", "0.51"))
    (msg,) = check_files(tmp_path)
    assert msg.startswith("docs/results.md: results block 1 (results/s.json) differs")
    assert write_files(tmp_path) == ["docs/results.md"] and check_files(tmp_path) == []


def test_quoted_numbers_name_their_fields():
    """Inline name=value, ratios (4.1x), percentages and +- spreads are template fields, not literal text."""
    templates = TEMPLATES
    bench = templates["results/readme/bench.md"]
    assert '`label_speedup={{values.benches["bench/lynx.py"].label_speedup|.2f}}`' in bench
    assert '`capture_overhead={{values.benches["bench/capture.py"].capture_overhead' in bench
    latent = templates["results/readme/latent_table.md"]
    assert "{{values.tables.seed40000[5].accuracy|pct|.1f}}%" in latent  # CODI on 1000 problems
    assert "|.1f}}x" in latent  # compression 4.1x
    assert "+- {{" in templates["results/readme/steer.md"]
    holes = sum(len(fields_of(t)) for t in templates.values())
    assert holes > 800


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_measured_number_outside_the_blocks(page):
    found = outside_numbers(PAGES[page])
    assert not found, f"{page}: move these into a results block tied to a summary, or name their paper:\n" + "\n".join(found)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_write_regenerates_every_page_unchanged(page):
    assert write(PAGES[page], ROOT) == PAGES[page]


def _summary_dir(tmp_path, values, template):
    (tmp_path / "results" / "readme").mkdir(parents=True)
    summary = {"command": "thinklens run x", "date": "2026-11-30", "source": "runs/x/1", "config": {"n": 60},
               "values": values}
    (tmp_path / "results" / "s.json").write_text(json.dumps(summary))
    (tmp_path / "results" / "readme" / "s.md").write_text(template)
    return summary


def test_a_drifted_number_is_reported_with_the_line(tmp_path):
    _summary_dir(tmp_path, {"acc": {"1": 0.98333}, "share": 0.127},
                 '{{config.n}} problems: {{values.acc["1"]|.3f}}, {{values.share|pct|.1f}}% (`--k 3`)\n')
    ok = "<!-- results: results/s.json template: results/readme/s.md -->\n60 problems: 0.983, 12.7% (`--k 3`)\n<!-- /results -->\n"
    assert problems(ok, tmp_path) == []
    drifted = ok.replace("0.983", "0.985")
    (msg,) = problems(drifted, tmp_path)
    assert "line 1 reads '60 problems: 0.985, 12.7% (`--k 3`)' where the template renders '60 problems: 0.983" in msg
    # a number equal to another field of the summary is still flagged: each number is tied to its own field
    assert problems(ok.replace("12.7%", "98.3%"), tmp_path)
    assert write(drifted, tmp_path) == ok


def test_fields_filters_and_bad_holes():
    s = {"values": {"t": [{"acc": -0.0275}], "b": {"bench/x.py": {"r": 4.13}}, "z": None}}
    assert render('{{values.t[0].acc|pct|+.1f}} / {{values.t[0].acc|abs|pct|.1f}} / {{values.b["bench/x.py"].r|.1f}}x', s) \
        == "-2.8 / 2.8 / 4.1x"
    assert field(s, 'values.b["bench/x.py"].r') == 4.13
    with pytest.raises(TemplateError, match="no item 3"):
        render("{{values.t[3].acc|.1f}}", s)
    with pytest.raises(TemplateError, match="format spec must come last"):
        render("{{values.t[0].acc|percent|.1f}}", s)
    with pytest.raises(TemplateError, match="format '.1q' does not apply"):
        render("{{values.t[0].acc|.1q}}", s)
    with pytest.raises(TemplateError, match="null"):
        render("{{values.z|.1f}}", s)
    # len counts the items of a list or the keys of a mapping ("3 seeds" from the configured seeds)
    assert render("{{values.t|len|.0f}} / {{values.b|len}}", s) == "1 / 1"
    with pytest.raises(TemplateError, match="not a list or mapping"):
        render("{{values.t[0].acc|len|.0f}}", s)


def test_holes_name_the_fields_they_mean():
    """A number is tied to the field that means it, not to another field that happens to share its value."""
    templates = TEMPLATES
    demo = templates["results/readme/demo.md"]
    assert demo.startswith("all {{config.n_steps|.0f}} steps")  # not the steer step's 12 seconds
    zoo = templates["results/readme/zoo.md"]
    assert '| {{values.accuracy.tiny-r1["2-4"]|nolead|.2f}} |' in zoo  # the table cell, not the 0.95 target
    assert "meet the {{config.accuracy_target_2to4|pct|.0f}}% target" in zoo
    steer = templates["results/readme/steer.md"]
    assert "{{values.rows[3].wait|.2f}} ({{values.rows[3].accuracy|.2f}})" in steer  # feature arm at c = 0
    rv = templates["results/readme/reasoning_vectors.md"]
    assert "{{config.seeds|len|.0f}} held-out seeds" in rv
    bench = templates["results/readme/bench.md"]
    assert "({{values.spread.label_speedup.min|.2f}} to {{values.spread.label_speedup.max|.2f}} here)" in bench


def test_missing_summary_template_and_unclosed_block_are_reported(tmp_path):
    text = "intro 3\n<!-- results: results/gone.json -->\n| m | 0.5 |\n<!-- /results -->\n"
    assert problems(text, tmp_path) == ["results block 1 names results/gone.json, which does not exist: "
                                        "write it with `python results/collect.py gone`"]
    _summary_dir(tmp_path, {"a": 1}, "{{values.a}}\n")
    untemplated = "<!-- results: results/s.json -->\n1\n<!-- /results -->\n<!-- results: results/t.json -->\n2\n"
    found = problems(untemplated, tmp_path)
    assert "2 results blocks open but 1 are closed" in found[0] and "names no template" in found[1]
    (tmp_path / "results" / "u.json").write_text(json.dumps({"command": "x", "date": "2026-11-30", "values": {}}))
    found = problems("<!-- results: results/u.json template: results/readme/s.md -->\n1\n<!-- /results -->\n", tmp_path)
    assert "lacks a non-empty source, config, values" in found[0]


def test_summaries_are_small():
    for name in {b.summary for _, b in all_blocks(ROOT)}:
        size = (ROOT / name).stat().st_size
        assert size < 50_000, f"{name} is {size} bytes: prune per-item arrays in results/collect.py"


@pytest.mark.parametrize("name", ["validation", "demo_findings", "real_jobs", "smol_r1_transfer"])
def test_table_templates_quote_every_row(name):
    """A table block names its rows one by one: a summary that grows (a new setting, a job with new findings)
    must not lose its last rows from the docs silently."""
    import re

    root = Path(__file__).resolve().parents[2]
    rows = json.loads((root / "results" / f"{name}.json").read_text())["values"]["rows"]
    quoted = set(map(int, re.findall(r"values\.rows\[(\d+)\]", (root / "results" / "readme" / f"{name}.md").read_text())))
    assert quoted == set(range(len(rows))), f"results/readme/{name}.md quotes rows {sorted(quoted)[-3:]}..., the summary has {len(rows)}"


def test_the_validation_table_template_has_one_line_per_row():
    """The template names its rows by index: a setting added to the summary needs its line (a 19-line template
    over 20 rows rendered 19 and dropped the last without an error)."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rows = json.loads((root / "results" / "validation.json").read_text())["values"]["rows"]
    named = {int(k) for k in re.findall(r"values\.rows\[(\d+)\]", (root / "results" / "readme" / "validation.md").read_text())}
    assert named == set(range(len(rows)))
