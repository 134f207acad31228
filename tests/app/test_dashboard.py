"""The home dashboard: headline words per run kind, the fixing command of a broken run (parsed by the real
CLI parser), the zoo's accuracy as numbers per step count, and the page on a broken + good runs folder."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.dashboard import age, data_of, demo_commands, fix_command, headline, model_of, zoo_accuracy_rows
from thinklens.runs.folders import RunFolder, discover_runs

APP = Path(__file__).resolve().parents[2] / "app"

SUMMARIES = {
    "zoo-eval": ({"models": ["tiny-cot", "tiny-think"], "steps": [2, 3]},
                 {"accuracy": {"tiny-cot": {"2": 0.9, "3": 0.8}, "tiny-think": {"2": 1.0, "3": 1.0}}}),
    "capture": ({"model": "tiny-think", "prompts": "/x/demo-prompts.txt"},
                {"n_rows": 455, "sites": ["resid_post.0", "resid_post.1"], "n_prompts": 16, "positions": "all"}),
    "mi-peaks": ({"model": "tiny-think", "compare": ["tiny-cot"], "min_steps": 2, "max_steps": 5},
                 {"n_problems": 60, "mean_peak_fraction": 0.107, "top_words": ["so"],
                  "models": {"tiny-think": {"accuracy": 0.98}, "tiny-cot": {"accuracy": 0.9}}}),
    "probe": ({"model": "tiny-think"}, {"target": "intermediate", "best_site": "resid_post.2", "best_score": 0.34, "scoring": "r2"}),
    "reasoning-vector": ({"model": "tiny-think"}, {"norm": 19.47, "alpha0_accuracy": 0.9,
                                                   "best": {"group": "all", "alpha": 0.0, "accuracy": 0.9}}),
    "latent-eval": ({}, {"rows": [{"label": "CoT-SFT", "accuracy": 0.938}, {"label": "CODI", "accuracy": 0.975}]}),
    "sae": ({"model": "tiny-think"}, {"explained_variance": 0.91, "l0": 32.0, "dead_features": 14}),
    "hybrid": ({"model": "tiny-cot", "thinking": "tiny-think"},
               {"base": {"accuracy": 0.65}, "thinking": {"accuracy": 0.95}, "hybrid": {"accuracy": 0.7, "fired_fraction": 0.11}}),
}
EXPECTED = {
    "zoo-eval": "tiny-think 100%, tiny-cot 85% (mean over step counts)",
    "capture": "455 rows at 2 sites from 16 prompts (all positions)",
    "mi-peaks": "tiny-think 98% right, MI not checked against its control, no thinking word shown; vs tiny-cot 90% (60 problems)",
    "probe": "intermediate value read best at resid_post.2 (r2 0.34)",
    "reasoning-vector": "|v| 19.5, accuracy 90% at α 0, best all at α 0.0 (90%)",
    "latent-eval": "CODI 98%, CoT-SFT 94% (2 methods)",
    "sae": "explained variance 0.910, L0 32, 14 dead of ? features at ?",
    "hybrid": "hybrid 70%, base 65%, thinking 95%; steering fired on 11% of tokens",
}


def test_headline_words_per_kind(runs):
    for kind, (config, summary) in SUMMARIES.items():
        RunFolder.create(kind, config, root=runs, run_id="a").finish(summary)
    entries = {e.kind: e for e in discover_runs(runs)}
    assert {k: headline(entries[k]) for k in SUMMARIES} == EXPECTED
    assert model_of(entries["hybrid"]) == "tiny-cot, tiny-think"
    assert data_of(entries["mi-peaks"]) == "synthetic, 2-5 steps" and data_of(entries["capture"]) == "demo-prompts.txt"


def test_lynx_headline_names_the_smallest_valid_delta(runs):
    run = RunFolder.create("lynx", {"model": "tiny-think"}, root=runs, run_id="l")
    run.write_result("per_delta", [
        {"delta": 0.02, "saving": 0.01, "accuracy_change": -0.0, "consistent": False, "validity_shown": False},
        {"delta": 0.05, "saving": 0.046, "accuracy_change": -0.033, "consistent": True, "validity_shown": True},
        {"delta": 0.1, "saving": 0.09, "accuracy_change": -0.08, "consistent": True, "validity_shown": True}])
    run.finish({"model": "tiny-think", "test_auroc": 0.89})
    (entry,) = discover_runs(runs)
    assert headline(entry) == "4.6% fewer tokens at -3.3 points, δ 0.05, shown valid; 2/3 δ shown valid; probe AUROC 0.89"


def test_lynx_headline_never_calls_an_underpowered_bound_valid(runs):
    """Issue 39: 19/379 = 0.0501 at δ 0.05 was headlined "valid"; not rejected with power 0.49 is not shown."""
    run = RunFolder.create("lynx", {"model": "tiny-think"}, root=runs, run_id="u")
    run.write_result("per_delta", [{"delta": 0.05, "saving": 0.5, "accuracy_change": 0.05, "consistent": True,
                                    "power": 0.49, "validity_shown": False}])
    run.finish({"model": "tiny-think", "test_auroc": 0.9})
    (entry,) = discover_runs(runs)
    assert headline(entry) == ("no δ shown within its bound; 0/1 δ shown valid (1 not rejected but underpowered); "
                               "probe AUROC 0.90")


def test_a_harm_is_never_shown_as_a_success():
    """Issue 39: a LYNX finding whose bound is rejected (verdict effect on "P(S={1}|y=0) exceeds delta") was shown
    green; a harm's effect is shown as an error, an effect the method claims as a success."""
    from app.dashboard import finding_tone
    from thinklens.probes.lynx_findings import VALIDITY

    rejected = {"statistic": VALIDITY, "verdict": "effect", "extra": {"harm": True}}
    assert finding_tone(rejected) == "error"
    assert finding_tone({"statistic": "saving", "verdict": "effect"}) == "success"
    assert finding_tone({"statistic": VALIDITY, "verdict": "too few samples", "extra": {"harm": True}}) == "warning"


def test_headline_states_findings_and_never_a_non_effect_as_one(runs):
    """A summary with findings is headlined by them: an effect as a claim, anything else as what was not shown
    (mutant killed: a headline that reads the top word / best alpha whatever the verdict)."""
    from thinklens.calibration.findings import findings_doc, paired_finding, ratio_finding

    null = ratio_finding("'so' is enriched at MI peaks", 1.007, (0.33, 1.8), n=40)
    real = paired_finding("steering the wait feature raises the wait rate", [1.0] * 30, [0.0] * 30,
                          control="equal-norm random feature", statistic="wait rate")
    run = RunFolder.create("mi-peaks", {"model": "tiny-think"}, root=runs, run_id="f")
    run.finish({"top_words": ["so"], "findings": findings_doc([null, real])})
    text = headline(discover_runs(runs)[0])
    assert text.startswith("not shown (no effect): 'so' is enriched at MI peaks; enrichment 1.007 [0.33, 1.8]")
    assert " · steering the wait feature raises the wait rate: wait rate 1 [1, 1] against equal-norm random feature 0, n=30" in text


def test_age_and_running_runs(runs):
    import datetime as dt

    assert age("2026-11-30T11:00:00", now=dt.datetime(2026, 11, 30, 11, 5)) == "5 min ago"
    assert age("", now=dt.datetime(2026, 11, 30)) == "?"
    RunFolder.create("probe", {"model": "m"}, root=runs, run_id="r")  # never finished
    assert headline(discover_runs(runs)[0]).startswith("still running")


def test_fix_commands_parse_with_the_cli(runs):
    from thinklens.cli import build_parser
    from thinklens.runs.demo_plan import DEMO_STEPS

    readable = RunFolder.create("probe", {"model": "tiny-think"}, root=runs, run_id="half")
    readable.write_meta(job="probe")
    bad = runs / "lynx" / "demo"
    bad.mkdir(parents=True)
    (bad / "config.json").write_text("{half-written")
    other = runs / "sae" / "mine"
    other.mkdir(parents=True)
    (other / "config.json").write_text("[")
    demo = demo_commands(runs)
    assert {f"{s.argv[1]}/{s.run_id}" for s in DEMO_STEPS} <= set(demo)
    parser = build_parser()
    fixes = {e.run_id: fix_command(e, demo) for e in discover_runs(runs)}
    assert fixes["half"].startswith("thinklens run probe --config ") and "--out" in fixes["half"]
    assert fixes["demo"].startswith(f"rm -r {bad}") and "thinklens run lynx" in fixes["demo"]
    assert fixes["mine"] == f"rm -r {other} && thinklens run sae --run-id mine"
    for text in fixes.values():
        args = shlex.split(text.split("&&")[-1])[1:]
        parser.parse_args(args)  # exits 2 on anything the CLI does not know


def test_zoo_accuracy_is_numbers_per_step_count(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zoo.json").write_text(json.dumps({"eval": {"accuracy": {"1": 1.0, "3": 0.5}}}))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "latent.json").write_text(json.dumps({"eval": {"accuracy": {"3": 0.25}}}))
    rows, cols = zoo_accuracy_rows(["a", "b", "missing"], tmp_path, {"a": "model a"})
    assert cols == ["1 steps", "3 steps"]
    assert rows[0]["3 steps"] == 50.0 and rows[1]["3 steps"] == 25.0 and "1 steps" not in rows[2]


def test_home_is_a_dashboard(runs):
    for kind, (config, summary) in SUMMARIES.items():
        run = RunFolder.create(kind, config, root=runs, run_id="demo")
        run.write_result("x", {})  # a finished run has results (one without is half-written: test below)
        run.finish(summary)
    broken = runs / "lynx" / "demo"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{half-written")
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception
    (card,) = at.error
    assert "lynx/demo cannot be read" in card.value
    assert any("thinklens run lynx" in c.value and c.value.startswith("rm -r ") for c in at.code)
    text = [m.value for m in at.markdown]
    for words in EXPECTED.values():
        assert words in text
    runs_table, models = (d.value for d in at.dataframe)
    assert len(runs_table) == len(SUMMARIES) and "headline" in runs_table.columns
    step_cols = [c for c in models.columns if c.endswith(" steps")]
    assert step_cols and all(v == "–" or (v.endswith("%") and 0 <= float(v[:-1]) <= 100)
                             for c in step_cols for v in models[c])
    assert len(at.get("plotly_chart")) == 1 and len(at.get("download_button")) >= 5
    assert not any("results missing" in m.value for m in at.markdown)  # every run here has its results


def _cells(frame) -> list:
    return [v for col in frame.columns for v in frame[col]]


def test_home_flags_a_half_written_run_with_the_command_that_finishes_it(runs):
    """meta.json says done but results/ was removed: the card says 'results missing' (not 'done' and the old
    headline), carries the rerun command (parsed by the real CLI), and the table row says so too."""
    import shutil

    from thinklens.cli import build_parser

    whole = RunFolder.create("probe", {"model": "tiny-think"}, root=runs, run_id="whole")
    whole.write_result("probe", {})
    whole.finish(SUMMARIES["probe"][1])
    half = RunFolder.create("probe", {"model": "tiny-think"}, root=runs, run_id="half")
    half.write_meta(job="probe")
    half.write_result("probe", {})
    half.finish(SUMMARIES["probe"][1])
    shutil.rmtree(half.path / "results")
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception and not at.error
    text = [m.value for m in at.markdown]
    assert any("`half`" in t and "results missing" in t for t in text)
    assert any("`whole`" in t and ":green-badge[done]" in t for t in text)
    assert any("results missing: it says done but lacks results/" in t for t in text)
    assert text.count(EXPECTED["probe"]) == 1  # the stale headline is shown for the whole run only
    (fix,) = [c.value for c in at.code]
    assert fix == f"thinklens run probe --config {half.path / 'config.json'} --out {half.path}"
    build_parser().parse_args(shlex.split(fix)[1:])
    table = at.dataframe[0].value
    status = dict(zip(table["id"], table["status"]))
    assert status == {"whole": "done", "half": "results missing"}, status
    assert any("1 say done but have no readable results" in c.value for c in at.caption)


def test_home_tables_have_no_none_cells(runs):
    """A run without a model, data or summary and a zoo model not evaluated at every step count show '–'."""
    bare = RunFolder.create("demo", {}, root=runs, run_id="bare")
    bare.write_result("x", {})
    bare.finish({})
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception
    runs_table, models = (d.value for d in at.dataframe)
    for frame in (runs_table, models):
        cells = _cells(frame)
        assert cells and not any(v is None or (isinstance(v, float) and v != v) or str(v) in ("None", "nan", "?")
                                 for v in cells), frame
    assert dict(runs_table.iloc[0])["model"] == "–" and dict(runs_table.iloc[0])["headline"] == "–"
    assert "folder" not in runs_table.columns and list(models.columns)[-1] == "description"
    # no table runs off the right: every shown column has a width and they sum to what a 1400 px window holds
    for el in at.dataframe:
        config = json.loads(el.proto.columns)
        frame = el.value
        shown = [c for c in frame.columns if not (config.get(c) or {}).get("hidden")]
        assert all((config.get(c) or {}).get("width") for c in shown), (shown, config)
        assert sum(config[c]["width"] for c in shown) <= 880, {c: config[c]["width"] for c in shown}


def test_run_rows_and_zoo_rows_oracle():
    """The pure helpers against hand-written rows: '–' for what is missing, a half-written run's status."""
    import datetime as dt

    from app.dashboard import run_rows, zoo_table_rows
    from thinklens.runs.folders import RunEntry

    e = RunEntry(path=Path("runs/probe/a"), kind="probe", run_id="a", status="done", created="2026-11-30T10:00:00",
                 summary=SUMMARIES["probe"][1], config={"model": "tiny-think"})
    now = dt.datetime(2026, 11, 30, 10, 30)
    assert run_rows([e], now=now) == [{"kind": "probe", "id": "a", "status": "done", "model": "tiny-think", "data": "–",
                                       "age": "30 min ago", "headline": EXPECTED["probe"]}]
    (row,) = run_rows([e], {"probe/a": ["results/"]}, now=now)
    assert row["status"] == "results missing" and "lacks results/" in row["headline"]
    got = zoo_table_rows([{"model": "a", "trained": True, "MB": 2.0, "description": "", "1 steps": 99.6},
                          {"model": "b", "trained": False, "MB": 0, "description": "x"}], ["1 steps", "3 steps"])
    assert got == [{"model": "a", "size": "2 MB", "1 steps": "100%", "3 steps": "–", "description": "–"},
                   {"model": "b", "size": "not trained", "1 steps": "–", "3 steps": "–", "description": "x"}]


def test_pages_point_at_the_page_that_shows_each_kind():
    from app.dashboard import pages

    PAGES = pages()  # each job's Job.page, from the registry
    assert PAGES["sae"] == ("pages/7_Features.py", "Features")  # the feature browser, not Steering
    assert PAGES["steer"][0] == "pages/4_Steering.py"
    assert PAGES["lynx"] == PAGES["probe"] == ("pages/3_Probes_and_LYNX.py", "Probes and LYNX")
    assert PAGES["validate"] == ("pages/8_Validation.py", "Validation")  # its runs listed there, ?run= opens one
    # every latent trainer has its own kind, and runs of the former shared kind still have their page
    assert PAGES["codi"] == PAGES["sft"] == PAGES["latent-train"] == ("pages/6_Latent_reasoning.py", "Latent reasoning")
    for kind, (page, _) in PAGES.items():
        assert (APP / page).is_file(), (kind, page)


# ---------------------------------------------------------------- a new job is its registration, nothing else


@pytest.fixture
def tally_job(monkeypatch):
    """A job no file of the app or the demo names, registered through the registry only (as an entry point would)."""
    from dataclasses import dataclass

    from thinklens.runs import job_registry, jobs

    @dataclass(frozen=True)
    class TallyConfig:
        model: str = ""
        """Unused."""
        seed: int = 0
        """Unused."""
        n: int = 3
        """How many to count."""

    def run(config, ctx):
        ctx.run.write_result("tally", {"n": config.n})
        return {"n": config.n, "twice": 2 * config.n}

    job = jobs.Job("tally", TallyConfig, run, help="count to n", models=(), order=45, page="pages/9_Explore.py",
                   headline=lambda summary, folder: f"counted to {summary['n']} ({(folder / 'results').name} written)",
                   demo=(jobs.DemoRun(("--n", "5")),))
    monkeypatch.setitem(job_registry._entry_points(), "tally", job)
    monkeypatch.setattr(job_registry, "_JOBS", dict(job_registry._JOBS or {}))
    return job


def test_a_registered_job_is_in_the_demo_plan_in_its_pipeline_place(tally_job):
    from thinklens.cli import build_parser
    from thinklens.runs.demo_plan import DEMO_STEPS

    steps = {s.name: s for s in DEMO_STEPS}
    assert steps["tally"].argv == ("run", "tally", "--n", "5", "--run-id", "demo", "--no-progress")
    assert steps["tally"].kind == "tally" and steps["tally"].run_id == "demo"
    names = [s.name for s in DEMO_STEPS]
    assert names.index("lynx") < names.index("tally") < names.index("probe")  # order 45: between LYNX (40) and probes (50)
    args = build_parser().parse_args(list(steps["tally"].argv))
    assert (args.job, args.n, args.run_id) == ("tally", 5, "demo")


def test_a_registered_job_shows_on_home_with_its_headline_page_and_order(tally_job, runs):
    """The job's demo step runs through the real CLI; Home shows its card between LYNX and probe runs, in the job's
    own headline words, linked to the job's page; the dashboard helpers say the same."""
    from app.dashboard import headline, pages
    from thinklens.cli import main
    from thinklens.runs.demo_plan import DEMO_STEPS

    (step,) = [s for s in DEMO_STEPS if s.name == "tally"]
    assert main(list(step.argv)) == 0
    for kind in ("probe", "lynx"):
        run = RunFolder.create(kind, SUMMARIES.get(kind, ({}, {}))[0], root=runs, run_id="demo")
        run.write_result("x", {})
        run.finish(SUMMARIES.get(kind, ({}, {"test_auroc": 0.9}))[1])
    entry = {e.kind: e for e in discover_runs(runs)}["tally"]
    assert headline(entry) == "counted to 5 (results written)"
    assert pages()["tally"] == ("pages/9_Explore.py", "Explore")
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception and not at.error
    titles = [m.value.split("**")[1] for m in at.markdown if m.value.startswith("**") and "-badge[" in m.value
              and not m.value.startswith("**Validation**")]
    assert titles == ["lynx", "tally", "probe"], titles
    assert "counted to 5 (results written)" in [m.value for m in at.markdown]
    links = {p.proto.label: p.proto.query_string for p in at.get("page_link")}
    assert links["open in Explore"] == "run=demo&kind=tally"


def test_a_job_that_cannot_load_never_hides_the_others(runs, monkeypatch):
    """A job module that fails to import (a half-edited file): Home warns with its error and still shows every run
    with its own job's words; the demo plan leaves it out and says why."""
    from types import SimpleNamespace

    from thinklens.runs import job_registry
    from thinklens.runs.demo_plan import demo_steps

    def fail():
        raise SyntaxError("half-edited job module")

    monkeypatch.setitem(job_registry._entry_points(), "broken-job", SimpleNamespace(value="pkg.broken:JOB", load=fail))
    monkeypatch.setattr(job_registry, "_JOBS", dict(job_registry._JOBS or {}))
    run = RunFolder.create("probe", SUMMARIES["probe"][0], root=runs, run_id="demo")
    run.write_result("x", {})
    run.finish(SUMMARIES["probe"][1])
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception and not at.error
    (warning,) = [w.value for w in at.warning]
    assert "job broken-job: SyntaxError: half-edited job module" in warning
    assert EXPECTED["probe"] in [m.value for m in at.markdown]
    errors: list[str] = []
    assert "probe" in [s.name for s in demo_steps(errors)] and errors == ["job broken-job: SyntaxError: half-edited job module"]
