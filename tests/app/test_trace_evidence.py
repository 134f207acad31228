"""From a headline number to the texts behind it (issue 40 item 2): each job kind's page links its numbers to the
trace viewer filtered to the traces that count, and the viewer lists exactly those.

Oracles: each filter is recomputed here from the run's own per-problem file (the unsteered grade of the same seed and
prompt for a broken problem; |p - y| for a probe's most-wrong examples), never read from the field the job wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
PAGES = APP / "pages"
SAE = ROOT / "data" / "saes" / "tiny-think-resid_post.2-topk32"


def _params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def _page(name: str, root: Path, monkeypatch, **params) -> AppTest:
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(str(PAGES / name), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = str(v)
    at.run()
    assert not at.exception, at.exception
    return at


def _viewer_ids(root: Path, monkeypatch, url: str, id_of=lambda label: label.split()[0]) -> list[str]:
    """The trace ids the viewer offers when opened at ``url`` (none: it says the run holds none); ``id_of`` reads
    an id from an option's label (a generic record's starts with its id)."""
    at = _page("5_Trace_viewer.py", root, monkeypatch, **_params(url))
    assert not at.error, [e.value for e in at.error]
    boxes = [b for b in at.selectbox if b.label.startswith("Trace (")]
    return [id_of(o) for o in boxes[0].options] if boxes else []


def _frame_with(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


# ------------------------------------------------------------------------------------------------------ steer

def _steer_run(root: Path) -> Path:
    """A steer run of two seeds over six problems: the unsteered run, the feature and a random feature at c = 1."""
    from thinklens.runs.folders import RunFolder
    from thinklens.steering.steer_traces import problem_records

    if not SAE.is_dir():
        pytest.skip("the committed SAE is not there")
    run = RunFolder.create("steer", {"model": "tiny-think", "sae": str(SAE), "word": "wait", "site": "resid_post.2"},
                           root=root, run_id="s")
    grades = {  # (seed, arm) -> right per problem
        (0, None): [1, 1, 1, 0, 0, 1], (0, "feature"): [0, 1, 0, 1, 0, 1], (0, "random_feature"): [1, 1, 1, 0, 0, 0],
        (1, None): [1, 0, 1, 1, 0, 1], (1, "feature"): [1, 1, 0, 0, 0, 0], (1, "random_feature"): [1, 0, 1, 1, 1, 1]}
    prompts, golds = [f"{i} + 1 =" for i in range(6)], [str(i + 1) for i in range(6)]
    recs, rows = [], []
    for seed in (0, 1):
        outcomes = [{"arm": arm, "feature": {None: None, "feature": 7, "random_feature": 3}[arm],
                     "coeff": 0.0 if arm is None else 1.0, "texts": [f"seed {seed} {arm} says {i}" for i in range(6)],
                     "correct": [bool(x) for x in grades[(seed, arm)]]} for arm in (None, "feature", "random_feature")]
        recs += problem_records(outcomes, prompts, golds, seed=seed)
    for arm, f in (("feature", 7), ("random_feature", 3)):
        for c in (0.0, 1.0):
            key = None if c == 0 else arm
            right = sum(sum(grades[(s, key)]) for s in (0, 1))
            rows.append({"arm": arm, "feature": f, "coeff": c, "accuracy": right / 12, "n_traces": 6.0,
                         "wait": 0.0, "sample": f"{arm} {c}", "mean_tokens": 4.0})
    run.write_result("steer", {"rows": rows, "chosen": {"feature": 7, "word": "wait"}, "site": "resid_post.2"})
    run.write_result("steer_problems", recs)
    run.finish({"feature": 7, "site": "resid_post.2"})
    return run.path


def test_steer_rows_link_the_problems_each_coefficient_broke(tmp_path, monkeypatch):
    """Catches: a broken problem taken across seeds or against another arm's grades, the fixed ones linked instead,
    a filter that keeps one condition of two (every problem of the point, or every broken one of the run)."""
    path = _steer_run(tmp_path)
    recs = json.loads((path / "results" / "steer_problems.json").read_text())
    base = {(r["seed"], r["problem"]): r["correct"] for r in recs if r["point"] == "unsteered"}
    at = _page("4_Steering.py", tmp_path, monkeypatch)
    rows = _frame_with(at, "broken problems")
    linked = 0
    for _, row in rows.iterrows():
        point = f"{row['arm']}/{row['feature']}/{float(row['coefficient']):g}"
        want = [f"steer_problems/{i}" for i, r in enumerate(recs) if r["point"] == point
                and base[(r["seed"], r["problem"])] and not r["correct"]]
        if float(row["coefficient"]) == 0.0:
            assert not isinstance(row["broken problems"], str)  # the unsteered run breaks nothing
            continue
        assert row["problems it broke"] == len(want)
        assert _viewer_ids(tmp_path, monkeypatch, row["broken problems"]) == want
        linked += 1
    assert linked == 2
    # hand-counted from the grades above: the feature broke 0 and 2 in seed 0 and 2, 3 and 5 in seed 1; the random
    # feature broke 5 in seed 0
    assert rows[rows["coefficient"] == 1.0]["problems it broke"].tolist() == [5, 1]


def test_a_steer_run_without_per_problem_traces_says_it_predates_them(tmp_path, monkeypatch):
    path = _steer_run(tmp_path)
    (path / "results" / "steer_problems.json").unlink()
    at = _page("4_Steering.py", tmp_path, monkeypatch)
    assert "broken problems" not in _frame_with(at, "accuracy").columns
    assert any("predates per-problem traces" in c.value for c in at.caption)


# ------------------------------------------------------------------------------------------------------ probe

def _probe_run(root: Path, n: int = 30) -> Path:
    """A --target correct probe run of ``n`` problems with held-out probabilities, written by the job's own builder."""
    import random

    from thinklens.probes.probe_traces import problem_records
    from thinklens.runs.folders import RunFolder

    rng = random.Random(3)
    y = [rng.randrange(2) for _ in range(n)]
    p = [round(rng.random(), 2) for _ in range(n)]  # rounded: ties in |p - y| happen, the earlier problem wins
    run = RunFolder.create("probe", {"model": "tiny-think", "target": "correct"}, root=root, run_id="c")
    run.write_result("sweep", {"target": "correct", "best_site": "resid_post.1", "findings_site": "resid_post.1",
                               "degenerate": None, "n_rows": n, "n_problems": n, "model_accuracy": sum(y) / n,
                               "sweeps": {"auroc": {"sites": ["resid_post.1"], "mean": [0.7], "std": [0.1]}}})
    run.write_result("probe_problems", problem_records([f"Q{i}" for i in range(n)], [f"answer {i}" for i in range(n)],
                                                       y, p, ids=[f"p{i}" for i in range(n)], golds=list(range(n)),
                                                       site="resid_post.1"))
    run.finish({"target": "correct", "best_site": "resid_post.1"})
    return run.path


def test_probe_score_links_its_most_wrong_examples(tmp_path, monkeypatch):
    """Catches: the most wrong taken by p alone (the confident right ones), by the wrong sign, too many or too few,
    or a link to every example."""
    import re

    from thinklens.probes.probe_traces import MOST_WRONG

    path = _probe_run(tmp_path)
    recs = json.loads((path / "results" / "probe_problems.json").read_text())
    errors = [abs(r["p_correct"] - int(r["correct"])) for r in recs]
    worst = sorted(range(len(recs)), key=lambda i: (-errors[i], i))[:MOST_WRONG]
    want = [f"probe_problems/{i}" for i in sorted(worst)]
    at = _page("3_Probes_and_LYNX.py", tmp_path, monkeypatch)
    md = next(m.value for m in at.markdown if "probe gets most wrong" in m.value)  # beside the sweep's table
    assert f"The {MOST_WRONG} examples" in md
    url = re.search(r"\]\(([^)]+)\)", md)[1]
    assert _viewer_ids(tmp_path, monkeypatch, url) == want
    (path / "results" / "probe_problems.json").unlink()  # a run from before: it says so, and links nothing
    at = _page("3_Probes_and_LYNX.py", tmp_path, monkeypatch)
    assert not any("most wrong" in m.value for m in at.markdown)  # neither beside the table nor under the headline
    assert any("predates per-problem traces" in c.value for c in at.caption)


def test_probe_probabilities_are_held_out():
    """Catches: probabilities of the probe fitted on every row (in-sample: its own training labels)."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold

    from thinklens.probes.estimators import LinearProbe
    from thinklens.probes.probe_traces import held_out_probabilities

    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 3))
    y = (X[:, 0] + 0.8 * rng.normal(size=24) > 0).astype(int)
    want = np.zeros(24)
    for train, test in StratifiedKFold(n_splits=3, shuffle=True, random_state=5).split(X, y):
        want[test] = LinearProbe(C=1.0).fit(X[train], y[train]).predict_proba(X[test])[:, 1]
    got = held_out_probabilities(LinearProbe(C=1.0), X, y, folds=3, seed=5)
    assert np.allclose(got, want)
    assert not np.allclose(got, LinearProbe(C=1.0).fit(X, y).predict_proba(X)[:, 1])


# ------------------------------------------------------------------------------------------------------ LYNX

def _lynx_run(root: Path) -> Path:
    """A LYNX run's traces in the job's format: four test rollouts, five cue events, exits at two δs."""
    import numpy as np
    import safetensors.numpy

    from thinklens.runs.folders import RunFolder

    run = RunFolder.create("lynx", {"model": "tiny-think"}, root=root, run_id="hand")
    rollouts = [{"prompt": f"Q{i}", "tokens": ["so", "wait", "####", str(i)], "text": f"so wait #### {i}"} for i in range(4)]
    (run.path / "cache").mkdir()
    (run.path / "cache" / "rollouts.test.0000.json").write_text(json.dumps(rollouts))
    (run.path / "arrays").mkdir()
    events = {"rollout": np.array([0, 1, 1, 2, 3]), "position": np.array([1, 0, 1, 1, 0]),
              "label": np.array([1, 0, 1, 0, 1]), "prob": np.array([0.9, 0.8, 0.95, 0.7, 0.6]),
              "exit_tokens": np.array([2.0, 1.0, 2.0, 2.0, 1.0]), "is_cue": np.ones(5, np.int8)}
    safetensors.numpy.save_file(events, str(run.path / "arrays" / "test_events.safetensors"))
    safetensors.numpy.save_file({"length": np.array([4] * 4), "correct": np.array([1, 1, 0, 1]),
                                 "tokens": np.array([4.0] * 4)}, str(run.path / "arrays" / "test_rollouts.safetensors"))
    outcomes = [{"policy": "lynx", "param": 0.1, "exit_event": [0, -1, -1, 4]},
                {"policy": "lynx", "param": 0.3, "exit_event": [0, 1, 3, -1]},
                {"policy": "full", "param": None, "exit_event": [-1, -1, -1, -1]}]
    run.write_result("lynx", {"summary": {"model": "tiny-think"}, "outcomes": outcomes})
    run.finish({})
    return run.path


def test_lynx_exit_filters_keep_exactly_the_early_exits(tmp_path, monkeypatch):
    """Catches: every rollout listed, the exits of another δ, an exit's correctness read from the full rollout (not
    its event's label), the wrong exits mixed with the right ones."""
    import re

    import safetensors.numpy

    from app.traces import traces_link
    from thinklens.probes.lynx_traces import exits_where

    def rollout(label: str) -> str:  # "test rollout #3 right, 4 tokens"
        return re.search(r"#(\d+)", label)[1]

    path = _lynx_run(tmp_path)
    label = safetensors.numpy.load_file(str(path / "arrays" / "test_events.safetensors"))["label"].tolist()
    outcomes = json.loads((path / "results" / "lynx.json").read_text())["outcomes"]
    for o in (o for o in outcomes if o["policy"] == "lynx"):
        taken = [(i, bool(label[e])) for i, e in enumerate(o["exit_event"]) if e >= 0]
        url = traces_link("lynx/hand", exits_where(o["param"]))
        assert _viewer_ids(tmp_path, monkeypatch, url, rollout) == [str(i) for i, _ in taken]
        wrong = [str(i) for i, right in taken if not right]
        url = traces_link("lynx/hand", exits_where(o["param"], correct=False))
        assert _viewer_ids(tmp_path, monkeypatch, url, rollout) == wrong
    assert wrong == ["1", "2"]  # at δ 0.3 rollouts 1 and 2 exit at events labelled 0 (rollout 1 is right in full)


# ------------------------------------------------------------------------------------------- reasoning-vector

def _rv_run(root: Path) -> Path:
    """A reasoning-vector run's sweep over five problems, two groups, α in {0, 1}, its records made by the job."""
    from thinklens.runs.folders import RunFolder
    from thinklens.steering import figures
    from thinklens.steering.jobs.reasoning_vector import TEXT_FIELDS, alpha_problem_records

    grades = {("all", 0.0): [1, 1, 0, 0, 1], ("all", 1.0): [0, 1, 1, 0, 0], ("mlp", 0.0): [1, 1, 0, 0, 1],
              ("mlp", 1.0): [1, 1, 1, 1, 0]}
    rows = [{"group": g, "alpha": a, "accuracy": sum(c) / 5, "correct": [bool(x) for x in c],
             "texts": [f"{g} {a} answer {i}" for i in range(5)], "prompts": [f"Q{i}" for i in range(5)],
             "golds": [str(i) for i in range(5)]} for (g, a), c in grades.items()]
    run = RunFolder.create("reasoning-vector", {"a": "x"}, root=root, run_id="rv")
    run.write_result("alpha_problems", alpha_problem_records(rows))
    rows = [{k: v for k, v in r.items() if k not in TEXT_FIELDS} for r in rows]
    run.write_result("alpha_sweep", rows)
    run.write_figure("alpha_sweep", figures.figure_alpha_sweep(rows))
    run.finish({})
    return run.path


def test_alpha_rows_link_the_problems_each_alpha_broke_and_fixed(tmp_path, monkeypatch):
    """Catches: a point compared with another group's α (not α 0, the target), broke and fixed swapped, the α-0 rows
    linked, or the texts of another α."""
    path = _rv_run(tmp_path)
    recs = json.loads((path / "results" / "alpha_problems.json").read_text())
    base = {r["problem"]: r["correct"] for r in recs if r["point"] == "α 0 (target)"}
    at = _page("4_Steering.py", tmp_path, monkeypatch)
    rows = _frame_with(at, "broken problems")
    checked = 0
    for _, row in rows.iterrows():
        if float(row["alpha"]) == 0.0:
            assert not isinstance(row["broken problems"], str)
            continue
        point = f"{row['group']} α {float(row['alpha']):g}"
        for change, keep in (("broken", lambda was, now: was and not now), ("fixed", lambda was, now: now and not was)):
            want = [f"alpha_problems/{i}" for i, r in enumerate(recs) if r["point"] == point
                    and keep(base[r["problem"]], r["correct"])]
            assert row[{"broken": "broke", "fixed": "fixed"}[change]] == len(want)
            assert _viewer_ids(tmp_path, monkeypatch, row[f"{change} problems"]) == want
            checked += 1
    assert checked == 4
    assert rows[rows["alpha"] == 1.0][["broke", "fixed"]].values.tolist() == [[2, 1], [1, 2]]  # hand-counted
    (path / "results" / "alpha_problems.json").write_text("[]")  # resumed from a run before per-problem traces
    at = _page("4_Steering.py", tmp_path, monkeypatch)
    assert "broken problems" not in _frame_with(at, "alpha").columns
    assert any("predates per-problem traces" in c.value for c in at.caption)


# ------------------------------------------------------------------------------------------------------ hybrid

def test_hybrid_modes_link_the_problems_each_broke_and_fixed_against_the_base(tmp_path, monkeypatch):
    """Catches: a mode paired with the thinking model (not the base), broke and fixed swapped, the base linked against
    itself, a run's texts left in hybrid.json, a link to nothing (a mode that broke none)."""
    from thinklens.runs.folders import RunFolder
    from thinklens.steering import figures
    from thinklens.steering.jobs.hybrid import PROBLEMS, mode_problem_records, without_texts

    grades = {"base": [1, 0, 0, 1, 0, 1], "thinking": [1, 1, 1, 1, 0, 0], "hybrid": [0, 1, 1, 1, 0, 1],
              "random_firing": [1, 0, 0, 1, 0, 1]}
    res = {m: {"accuracy": sum(c) / 6, "fired_fraction": 0.1, "changed_fraction": 0.05, "gap_recovered": None,
               "correct": [bool(x) for x in c], "texts": [f"{m} says {i}" for i in range(6)]} for m, c in grades.items()}
    run = RunFolder.create("hybrid", {"b": "x"}, root=tmp_path, run_id="hy")
    run.write_result(PROBLEMS, mode_problem_records(res, [f"Q{i}" for i in range(6)], list(range(6))))
    res = {m: without_texts(r) for m, r in res.items()}
    run.write_result("hybrid", res)
    run.write_figure("hybrid", figures.figure_hybrid(res))
    run.finish({})
    recs = json.loads((run.path / "results" / "hybrid_problems.json").read_text())
    base = {r["problem"]: r["correct"] for r in recs if r["point"] == "base"}
    at = _page("4_Steering.py", tmp_path, monkeypatch)
    rows = _frame_with(at, "broken problems").set_index("mode")
    assert not isinstance(rows.loc["base", "broken problems"], str)
    for mode in ("thinking", "hybrid"):
        for change, col, keep in (("broken", "broke", lambda was, now: was and not now),
                                  ("fixed", "fixed", lambda was, now: now and not was)):
            want = [f"hybrid_problems/{i}" for i, r in enumerate(recs) if r["point"] == mode
                    and keep(base[r["problem"]], r["correct"])]
            assert rows.loc[mode, col] == len(want)
            assert _viewer_ids(tmp_path, monkeypatch, rows.loc[mode, f"{change} problems"]) == want
    assert rows.loc["hybrid", ["broke", "fixed"]].tolist() == [1, 2]  # hand-counted: broke 0, fixed 1 and 2
    assert rows.loc["random_firing", ["broke", "fixed"]].tolist() == [0, 0]  # the base's own grades: 0, and no link
    assert not isinstance(rows.loc["random_firing", "broken problems"], str)
    assert not isinstance(rows.loc["random_firing", "fixed problems"], str)


# ------------------------------------------------------------------------------------------------------ zoo-eval

def test_zoo_eval_card_links_each_models_wrong_answers_and_what_it_broke(tmp_path, monkeypatch):
    """Catches: a model's wrong answers mixed with another model's, the pairing against a model other than the first,
    broke and fixed swapped, links for a run without per-problem traces."""
    import re

    from thinklens.runs.folders import RunFolder
    from thinklens.zoo.eval_result import ZooEvalResult
    from thinklens.zoo.jobs.zoo_eval import PROBLEMS, problem_records

    grades = {"tiny-cot": [1, 1, 0, 1], "tiny-think": [0, 1, 1, 0], "tiny-direct": [1, 0, 0, 1], "tiny-r1": [1, 1, 1, 1]}
    results = [ZooEvalResult(m, "cot", 0, 2, {1: sum(c[:2]) / 2, 2: sum(c[2:]) / 2}, {},
                             problems=[{"steps": 1 + i // 2, "prompt": f"Q{i}", "text": f"{m} {i}", "gold": str(i),
                                        "correct": bool(x)} for i, x in enumerate(c)]) for m, c in grades.items()]
    run = RunFolder.create("zoo-eval", {"model": "tiny-cot"}, root=tmp_path, run_id="z")
    run.write_result("zoo_eval", [r.to_json() for r in results])
    run.write_result(PROBLEMS, problem_records(results))
    run.finish({})
    assert "problems" not in json.loads((run.path / "results" / "zoo_eval.json").read_text())[0]
    recs = json.loads((run.path / "results" / "zoo_problems.json").read_text())
    first = {r["problem"]: r["correct"] for r in recs if r["point"] == "tiny-cot"}
    at = _page("../Home.py", tmp_path, monkeypatch)
    md = next(m.value for m in at.markdown if "tl-link" in m.value and "wrong" in m.value)
    links = {label: url.replace("&amp;", "&") for url, label in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', md)}
    for model in grades:
        want = [f"zoo_problems/{i}" for i, r in enumerate(recs) if r["point"] == model and not r["correct"]]
        if not want:  # no wrong answer: no link to nothing
            assert f"{model}: 0 wrong" not in links and model == "tiny-r1", links
            continue
        assert _viewer_ids(tmp_path, monkeypatch, links[f"{model}: {len(want)} wrong"]) == want
    broke = [f"zoo_problems/{i}" for i, r in enumerate(recs) if r["point"] == "tiny-think"
             and first[r["problem"]] and not r["correct"]]
    assert len(broke) == 2 and _viewer_ids(tmp_path, monkeypatch, links["tiny-think: 2 broken against tiny-cot"]) == broke
    fixed = [f"zoo_problems/{i}" for i, r in enumerate(recs) if r["point"] == "tiny-think"
             and not first[r["problem"]] and r["correct"]]
    assert _viewer_ids(tmp_path, monkeypatch, links["tiny-think: 1 fixed against tiny-cot"]) == fixed
    assert not any(label.startswith("tiny-cot: ") and "against" in label for label in links)


# ------------------------------------------------------------------------------------------------------ sae

def test_sae_feature_rows_link_their_top_contexts(tmp_path, monkeypatch):
    """Catches: a row linked to another feature's contexts (the rank instead of the index), or to another run."""
    import random
    import shutil

    from thinklens.runs.folders import RunFolder
    from thinklens.steering.features import FeatureStats

    if not SAE.is_dir():
        pytest.skip("the committed SAE is not there")
    d = json.loads((SAE / "cfg.json").read_text())["d_sae"]
    rng = random.Random(1)
    freq = [rng.random() for _ in range(d)]
    run = RunFolder.create("sae", {"model": "tiny-think", "site": "resid_post.2"}, root=tmp_path, run_id="s")
    shutil.copytree(SAE, run.path / "sae")
    stats = FeatureStats(site="resid_post.2", n_traces=4, n_tokens=40, freq=freq, mean_act=freq, max_act=freq,
                         corr_words={"wait": [rng.uniform(-1, 1) for _ in range(d)]}, word_counts={"wait": 3},
                         corr_correct=None, accuracy=None)
    run.write_result("feature_stats", stats.to_json())
    run.finish({})
    at = _page("4_Steering.py", tmp_path, monkeypatch)
    rows = _frame_with(at, "top contexts")
    corr = stats.corr_words["wait"]
    assert rows["feature"].tolist() == sorted(range(d), key=lambda i: -corr[i])[:15]
    for _, r in rows.iterrows():
        assert _params(r["top contexts"]) == {"kind": "sae", "run": "s", "feature": str(r["feature"])}
        assert urlsplit(r["top contexts"]).path == "/Features"
    # the link opens the Features page on that feature (its run statistics and its contexts)
    f = int(rows["feature"].iloc[0])
    at = _page("7_Features.py", tmp_path, monkeypatch, **_params(rows["top contexts"].iloc[0]))
    assert any(h.value == f"Top contexts of feature {f}" for h in at.subheader)


# ------------------------------------------------------------------------------- Home: the headline's own traces

def _with_findings(path: Path, findings: list[dict]) -> None:
    """The run's meta.json summary given ``findings`` (what Home's card headlines: the first two)."""
    meta = json.loads((path / "meta.json").read_text())
    meta["summary"] = {**(meta.get("summary") or {}), "findings": findings}
    (path / "meta.json").write_text(json.dumps(meta))


def _card_links(root: Path, monkeypatch, run: str) -> dict[str, str]:
    """Label -> URL of the links on Home's card of ``run`` (``<kind>/<id>``)."""
    import re

    at = _page("../Home.py", root, monkeypatch)
    md = [m.value for m in at.markdown if "tl-link" in m.value and f"run={run}" in m.value]
    assert len(md) == 1, md
    return {label: url.replace("&amp;", "&") for url, label in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', md[0])}


def _finding(statistic: str, value: float, **extra) -> dict:
    return {"claim": "c", "statistic": statistic, "value": value, "ci": [0.0, 1.0], "n": 12, "control": "x",
            "control_value": 0.1, "verdict": "effect", "extra": extra}


def test_steer_card_links_each_headlined_coefficients_texts_and_what_it_broke(tmp_path, monkeypatch):
    """Catches: a coefficient's texts mixed with another arm's (the random feature at the same c), the broken problems
    counted against another seed's unsteered grade, a link to every steered sample instead of the headline's."""
    path = _steer_run(tmp_path)
    _with_findings(path, [_finding("wait_rate", 0.5, coeff=1.0)])
    recs = json.loads((path / "results" / "steer_problems.json").read_text())
    base = {(r["seed"], r["problem"]): r["correct"] for r in recs if r["point"] == "unsteered"}
    links = _card_links(tmp_path, monkeypatch, "steer/s")
    texts = [f"steer_problems/{i}" for i, r in enumerate(recs) if r["point"] == "feature/7/1"]
    assert len(texts) == 12 and _viewer_ids(tmp_path, monkeypatch, links["c=1: the 12 steered texts"]) == texts
    broke = [f"steer_problems/{i}" for i, r in enumerate(recs) if r["point"] == "feature/7/1"
             and base[(r["seed"], r["problem"])] and not r["correct"]]
    assert len(broke) == 5  # hand-counted in _steer_run
    assert _viewer_ids(tmp_path, monkeypatch, links["c=1: 5 problems it broke"]) == broke
    assert list(links)[0] == "its steer traces"  # the whole run first (a validate setting's link is the first)
    (path / "results" / "steer_problems.json").unlink()  # a run from before: its one sample at that coefficient
    links = _card_links(tmp_path, monkeypatch, "steer/s")
    assert _params(links["c=1: its first sample"]) == {"run": "steer/s", "trace": "feature/7/1", "quantity": "diff"}


def test_lynx_card_links_the_exits_at_its_headlined_delta(tmp_path, monkeypatch):
    """Catches: the exits of another δ than the headline's, the wrong exits read from the full rollouts."""
    import re

    path = _lynx_run(tmp_path)
    _with_findings(path, [_finding("saving", 0.2, delta=0.3), _finding("accuracy", 0.5, delta=0.3)])
    links = _card_links(tmp_path, monkeypatch, "lynx/hand")

    def rollout(label: str) -> str:
        return re.search(r"#(\d+)", label)[1]

    assert _viewer_ids(tmp_path, monkeypatch, links["δ 0.3: 3 early exits"], rollout) == ["0", "1", "2"]
    assert _viewer_ids(tmp_path, monkeypatch, links["δ 0.3: 2 exits answering wrong"], rollout) == ["1", "2"]
    assert not [label for label in links if label.startswith("δ 0.1")]  # not headlined


def test_probe_card_links_the_examples_its_score_gets_most_wrong(tmp_path, monkeypatch):
    from thinklens.probes.probe_traces import MOST_WRONG

    path = _probe_run(tmp_path)
    _with_findings(path, [_finding("auroc", 0.7123, site="resid_post.1")])
    recs = json.loads((path / "results" / "probe_problems.json").read_text())
    errors = [abs(r["p_correct"] - int(r["correct"])) for r in recs]
    worst = sorted(sorted(range(len(recs)), key=lambda i: (-errors[i], i))[:MOST_WRONG])
    links = _card_links(tmp_path, monkeypatch, "probe/c")
    url = links[f"auroc 0.712: the {MOST_WRONG} examples it gets most wrong"]
    assert _viewer_ids(tmp_path, monkeypatch, url) == [f"probe_problems/{i}" for i in worst]
    assert not [label for label in links if label.startswith("most_wrong")]  # said once, by the headline's link


def test_a_link_to_lynx_exits_at_a_delta_opens_that_deltas_exit(tmp_path, monkeypatch):
    """Catches: the view marking another δ's exit (the middle one of the sweep) than the δ the link names, and no
    position opened where the filter names one."""
    from app.traces import traces_link
    from thinklens.probes.lynx_traces import exits_where

    _lynx_run(tmp_path)
    for delta, first, position in ((0.1, "0", 1), (0.3, "0", 1)):
        at = _page("5_Trace_viewer.py", tmp_path, monkeypatch, **_params(traces_link("lynx/hand", exits_where(delta))))
        assert not at.error, [e.value for e in at.error]
        marks = next(m for m in at.multiselect if m.label == "Marks")
        assert [m for m in marks.value if m.startswith("exit")] == [f"exit at δ {delta:g}"]
        assert next(b for b in at.selectbox if b.label.startswith("Trace (")).value == first
        assert any(h.value == f"Token {position}: `wait`" for h in at.subheader), [h.value for h in at.subheader]
    # the wrong exits at δ 0.3: rollout 1 exits at event 1 (position 0), its first
    at = _page("5_Trace_viewer.py", tmp_path, monkeypatch,
               **_params(traces_link("lynx/hand", exits_where(0.3, correct=False))))
    assert any(h.value == "Token 0: `so`" for h in at.subheader), [h.value for h in at.subheader]
