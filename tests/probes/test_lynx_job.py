"""``thinklens run lynx`` end to end on a zoo model (Python and CLI), its resume, and its refusals of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
from zoo_fixtures import reasoner, zooish  # noqa: F401 - fixtures

from thinklens.cli import build_parser, main
from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MondrianCalibrator
from thinklens.probes.estimators import LinearProbe
from thinklens.probes.io import load_probe, save_probe
from thinklens.probes.jobs.lynx import JOB, LynxJobConfig, usable_deltas
from thinklens.probes.lynx import check_cue_vocabulary
from thinklens.probes.lynx_result import load_lynx_result, load_test_tables
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job

# the discrimination gate off: 40 calibration rollouts hold about 8 cue events, too few to show the probe's AUROC
# above chance, and these tests exercise LYNX's exits (the gate's own test turns it on)
SMALL = dict(n_train=40, n_calibration=40, n_test=40, max_steps=2, hidden_layer_sizes=(32,), batch_size=16,
             deltas=(0.1, 0.2, 0.3), skip_vacuous=True, gate_auroc=None)


def run_lynx(model, root: Path, run_id: str, **fields):
    """The job as notebooks call it: a loaded model, the run folder ``root/lynx/run_id``."""
    return run_job("lynx", model=model, runs=root, run_id=run_id, progress=False, **fields)


@pytest.fixture(scope="module")
def straight(reasoner, tmp_path_factory):
    """One uninterrupted small run: (config, run folder, result, seconds)."""
    cfg = LynxJobConfig(model=reasoner.name, **SMALL)
    root = tmp_path_factory.mktemp("runs")
    t0 = time.perf_counter()
    result = run_lynx(reasoner, root, "straight", **SMALL)
    return cfg, RunFolder.open(root / "lynx" / "straight"), result, time.perf_counter() - t0


def test_end_to_end_writes_a_complete_run(straight, reasoner):
    cfg, run, result, seconds = straight
    assert seconds < 60
    for rel in ("results/lynx.json", "results/per_delta.json", "results/probe_validation.json", "probe/probe.json",
                "probe/probe.safetensors", "arrays/test_events.safetensors", "arrays/test_rollouts.safetensors"):
        assert (run.path / rel).is_file(), rel
    assert set(run.figures()) == {"pareto", "validity", "exit_histogram", "base_rate"}
    assert run.meta()["status"] == "done" and run.meta()["job"] == "lynx"
    assert JOB.make_config(config_file=run.path / "config.json") == cfg  # the folder's config.json rebuilds it
    assert not list(run.path.rglob("*.pkl")) and not list(run.path.rglob("*.pickle"))
    s = result.summary
    assert s["splits"]["test"]["rollouts"] == 40 and s["splits"]["train"]["cue_events"] > 0
    assert 0 < s["splits"]["train"]["label_base_rate"] < 1  # both forced-exit outcomes occur
    # the per-delta table agrees with the report and the validity curve
    usable = result.lynx_deltas()
    assert [r["delta"] for r in result.per_delta] == usable and set(usable) <= set(cfg.deltas)
    for row in result.per_delta:
        o = result.report.get("lynx", row["delta"])
        assert row["accuracy"] == o.accuracy and row["saving"] == o.saving
        assert row["accuracy_change"] == pytest.approx(o.accuracy - result.report.get("full").accuracy)
        assert 0 <= row["rate"] <= row["upper"] <= 1 and row["margin"] == pytest.approx(row["upper"] - row["rate"])
    # the stored test events: saved probe probabilities, labels from the forced exits
    events, rollouts = load_test_tables(run)
    assert events.n == s["splits"]["test"]["events"] and rollouts.n == 40
    assert result.report.get("full").accuracy == pytest.approx(rollouts.correct.mean())
    assert result.report.get("full").accuracy == pytest.approx(s["splits"]["test"]["full_accuracy"])
    probe = load_probe(run.path / "probe", expect_site=s["sites"], expect_d_model=reasoner.d_model)
    X = np.concatenate([safetensors.numpy.load_file(str(p))["X"]
                        for p in sorted((run.path / "cache").glob("features.test_cues.*.safetensors"))])
    np.testing.assert_array_equal(probe.predict_proba(X)[:, 1], events.prob)


def test_test_exits_happen_at_real_cues_and_cost_what_the_reference_charges(straight):
    # the reference's evaluation scans real cue events only (fallbacks build training and calibration data), and
    # charges an exit the tokens before the cue + the exit string + the forced answer
    _, run, result, _ = straight
    s, (events, rollouts) = result.summary, load_test_tables(run)
    test, cal = s["splits"]["test"], s["splits"]["calibration"]
    assert events.is_cue.all() and test["fallback_events"] == 0 and test["events"] == test["cue_events"] == events.n
    assert cal["fallback_events"] == cal["events"] - cal["cue_events"] > 0  # calibration keeps them
    assert test["events_cap"] is None and cal["events_cap"] == 100 and test["most_cue_events_per_rollout"] >= 1
    has_cue = np.bincount(events.rollout, minlength=rollouts.n) > 0
    for o in result.report.outcomes:  # a rollout without a cue never exits, whatever the policy
        assert (o.exit_event[~has_cue] == -1).all(), o.label
    labels = [json.loads(p.read_text()) for p in sorted((run.path / "cache").glob("labels.test_cues.*.json"))]
    answer_tokens = np.concatenate([d["answer_tokens"] for d in labels])
    assert s["exit_string_tokens"] == 2  # "</think> ####" in the zoo's word-level tokenizer
    # the zoo's cues are one token each: the tokens before the cue are its position
    np.testing.assert_array_equal(events.exit_tokens, events.position + 2 + answer_tokens)
    for o in result.report.outcomes:
        exited = o.exit_event >= 0
        tokens = np.where(exited, events.exit_tokens[np.maximum(o.exit_event, 0)], rollouts.tokens)
        assert o.mean_tokens == pytest.approx(tokens.mean()), o.label


def test_calibration_on_real_cues_only(straight, reasoner, tmp_path):
    # --no-calibration-fallbacks: the conformal thresholds come from the calibration split's cue events alone
    _, done, result, _ = straight
    cal = result.summary["calibration"]
    assert cal["fallbacks"] is True and cal["negatives"] == "real cue events only"
    # fallback negatives never calibrate (the test events LYNX exits at are cues); fallback positives do
    assert cal["n_pos"] + cal["n_neg"] == cal["events"]
    assert cal["events"] + cal["fallback_negatives_left_out"] == result.summary["splits"]["calibration"]["events"]
    assert cal["fallback_negatives_left_out"] > 0
    # at T = 0.6 tiny-think writes a cue in about one 1-2 step rollout of five: more calibration problems
    fields = SMALL | dict(n_calibration=200, deltas=(0.2, 0.3), probe=str(done.path / "probe"))
    cues = run_lynx(reasoner, tmp_path, "cuecal", **fields, calibration_fallbacks=False)
    c, split = cues.summary["calibration"], cues.summary["splits"]["calibration"]
    assert c["fallbacks"] is False and c["n_pos"] + c["n_neg"] == split["cue_events"] < split["events"]
    assert cues.summary["splits"]["test"] == result.summary["splits"]["test"]


def test_result_round_trips_through_the_run_folder(straight):
    _, run, result, _ = straight
    loaded = load_lynx_result(RunFolder.open(run.path))
    assert loaded.per_delta == json.loads((run.path / "results" / "per_delta.json").read_text())
    assert [o.summary() for o in loaded.report.outcomes] == [o.summary() for o in result.report.outcomes]
    for a, b in zip(loaded.report.outcomes, result.report.outcomes):
        np.testing.assert_array_equal(a.exit_event, b.exit_event)
        np.testing.assert_array_equal(a.exit_fraction, b.exit_fraction)
    np.testing.assert_array_equal(loaded.validity.rate, result.validity.rate)
    np.testing.assert_array_equal(loaded.base_rate.rate, result.base_rate.rate)
    assert set(loaded.figures(histogram_delta=loaded.lynx_deltas()[0])) == {"pareto", "validity", "exit_histogram",
                                                                           "base_rate"}


class _Interrupt:
    """Wrap a callable so that its ``at``-th call raises KeyboardInterrupt (a user pressing Ctrl-C)."""

    def __init__(self, fn, at: int):
        self.fn, self.at, self.calls = fn, at, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.fn(*args, **kwargs)


def test_resume_after_interruptions_equals_a_straight_run(straight, reasoner, tmp_path, monkeypatch):
    cfg, done, _, _ = straight
    import thinklens.probes.lynx_splits as lynx_splits

    n_chunks = sum(-(-cfg.n_problems(s) // cfg.batch_size) for s in ("train", "calibration", "test"))  # 9

    log: list[tuple[_Interrupt, _Interrupt]] = []

    def attempt(gen_at: int, labels_at: int) -> tuple[_Interrupt, _Interrupt]:
        gen, labels = _Interrupt(reasoner.generate, gen_at), _Interrupt(lynx_splits.event_features_and_labels, labels_at)
        log.append((gen, labels))
        monkeypatch.setattr(reasoner, "generate", gen)
        monkeypatch.setattr(lynx_splits, "event_features_and_labels", labels)
        try:
            run_lynx(reasoner, tmp_path, "resumed", **SMALL)  # same config and id: the folder is reused
        finally:
            monkeypatch.undo()
        return gen, labels

    # the splits are rolled out and labelled one after another, chunk by chunk (train, calibration, test)
    with pytest.raises(KeyboardInterrupt):
        attempt(gen_at=4, labels_at=-1)  # Ctrl-C in the first calibration rollout chunk, the train split done
    assert log[0][1].calls == 3  # the train split's three label chunks
    with pytest.raises(KeyboardInterrupt):
        attempt(gen_at=-1, labels_at=3)  # then in the calibration split's third features+labels chunk
    assert log[1][0].calls == 3  # the calibration split's rollouts: the train split's were read back
    gen, labels = attempt(gen_at=-1, labels_at=-1)
    # finished chunks were read back, not redone: the calibration chunk interrupted, then the test split
    assert gen.calls == n_chunks // 3 and labels.calls == 1 + n_chunks // 3
    run = RunFolder.open(tmp_path / "lynx" / "resumed")
    for name in ("lynx", "per_delta", "probe_validation"):
        assert (run.path / "results" / f"{name}.json").read_text() == (done.path / "results" / f"{name}.json").read_text()
    for rel in ("probe/probe.safetensors", "arrays/test_events.safetensors"):
        assert (run.path / rel).read_bytes() == (done.path / rel).read_bytes()


def test_a_saved_probe_is_reused_and_checked(straight, reasoner, tmp_path):
    _, done, result, _ = straight
    again = run_lynx(reasoner, tmp_path, "reuse", **SMALL, probe=str(done.path / "probe"))
    assert again.per_delta == result.per_delta and again.summary["probe"]["source"] == str(done.path / "probe")
    assert set(again.summary["splits"]) == {"calibration", "test"}  # no training rollouts for a given probe
    assert not list((tmp_path / "lynx" / "reuse" / "cache").glob("rollouts.train.*"))
    with pytest.raises(ThinklensError, match="probe site"):
        run_lynx(reasoner, tmp_path, "wrong", **SMALL, probe=str(done.path / "probe"), sites=("1", "2"))


@pytest.mark.parametrize("kw,needle", [
    ({"deltas": (0.05, 1.2)}, "bad delta"),
    ({"deltas": (0.0,)}, "bad delta"),
    ({"deltas": ()}, "bad deltas"),
    ({"cue_words": ("wait", "a/b")}, "bad cue word"),
    ({"n_calibration": 2, "max_events_calibration": 3}, "at least 99 events of each class"),
    ({"prompt_format": "thnk"}, "did you mean 'think'"),
    ({"data_fields": "question=prompt"}, "pass data= too"),  # from Python: the keyword form
    ({"exit_string": ""}, "bad exit_string"),
    ({"fractions": (1.5,)}, "bad fractions"),
])
def test_config_refuses_bad_input(kw, needle):
    with pytest.raises(ThinklensError, match=needle):
        LynxJobConfig(**kw)


def test_calibration_too_small_for_a_delta_says_how_many_events():
    cal = MondrianCalibrator.fit(np.r_[np.full(12, 0.9), np.full(30, 0.2)], np.r_[np.ones(12), np.zeros(30)])
    with pytest.raises(ThinklensError, match=r"12 positive and 30 negative.*at least 19 events of each class"):
        usable_deltas(LynxJobConfig(deltas=(0.05, 0.1)), cal)
    assert usable_deltas(LynxJobConfig(deltas=(0.05, 0.1), skip_vacuous=True), cal) == ([0.1], [0.05])
    with pytest.raises(ThinklensError, match="at least one delta"):
        usable_deltas(LynxJobConfig(deltas=(0.01, 0.05), skip_vacuous=True), cal)


def test_unknown_and_absent_cue_words(zooish, tmp_path):
    check_cue_vocabulary(zooish.tokenizer, ("hmm", "wait", "so"))
    with pytest.raises(ThinklensError, match="bad cue word: received 'alternatively'"):
        check_cue_vocabulary(zooish.tokenizer, ("hmm", "alternatively"))
    # a phrase the random model never writes: no cue events at all, said once the train split's (fallback) labels
    # cannot train a probe, before the other splits are rolled out
    with pytest.raises(ThinklensError, match="bad cue events.*no tom has 7 in 4 rollouts"):
        run_lynx(zooish, tmp_path, "nocue", cue_words=("Tom has 7",), n_train=4, n_calibration=4, n_test=4,
                 max_steps=1, max_new_tokens=12, skip_vacuous=True, prompt_format="think")


def test_one_class_labels_stop_with_a_clear_error(zooish, tmp_path):
    # the random model never answers right: nothing to learn, said in one line after the train split
    with pytest.raises(ThinklensError, match=r"labels of the train split: received 'class counts \[\d+, 0\] after 6 of 6"):
        run_lynx(zooish, tmp_path, "oneclass", n_train=6, n_calibration=6, n_test=6, max_steps=1, max_new_tokens=16,
                 cue_words=("hmm", "wait", "so", "tom", "ann", "sam", "apples", "pears", "coins"), skip_vacuous=True,
                 prompt_format="think")


# ---------------------------------------------------------------- the CLI


def _one_line_error(capsys, argv: list[str], needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ")


def test_cli_options_come_from_the_config():
    args = build_parser(["lynx"]).parse_args(["run", "lynx", "--model", "tiny-think", "--cue-words", "hmm,wait",
                                              "--deltas", "0.05,0.1", "--skip-vacuous", "--max-events-test", "none"])
    assert (args.cue_words, args.deltas, args.skip_vacuous, args.max_events_test) == (("hmm", "wait"), (0.05, 0.1),
                                                                                      True, None)
    args = build_parser(["lynx"]).parse_args(["run", "lynx", "--no-calibration-fallbacks"])
    assert args.calibration_fallbacks is False


@pytest.mark.parametrize("extra,needle", [
    (["--deltas", "0.05,1.2"], "bad delta: received 1.2"),
    (["--deltas", "0"], "bad delta: received 0.0"),
    (["--n-calibration", "5", "--max-events-calibration", "2"], "at least 99 events of each class"),
    (["--cue-words", "wa/it"], "bad cue word"),
])
def test_cli_config_errors_before_any_work(capsys, tmp_path, extra, needle):
    _one_line_error(capsys, ["run", "lynx", "--model", "tiny-think", "--runs", str(tmp_path), *extra], needle)
    assert not (tmp_path / "lynx").exists()  # nothing was created


def test_cli_argparse_errors_are_one_line():
    res = subprocess.run([sys.executable, "-m", "thinklens.cli", "run", "lynx", "--n-train", "many"],
                         capture_output=True, text=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert "expected int, received 'many'" in res.stderr


def test_cli_model_side_errors_exit_2(capsys, zooish, tmp_path):
    base = ["run", "lynx", "--model", zooish.name, "--prompt-format", "think", "--runs", str(tmp_path), "--no-progress", "--n-train", "4",
            "--n-calibration", "4", "--n-test", "4", "--max-steps", "1", "--max-new-tokens", "10", "--skip-vacuous"]
    _one_line_error(capsys, [*base, "--cue-words", "hmm,alternatively"], "bad cue word: received 'alternatively'")
    _one_line_error(capsys, [*base, "--cue-words", "Tom has 7", "--run-id", "nocue"], "bad cue events")
    probe_dir = tmp_path / "probe"
    X = np.random.default_rng(0).normal(size=(20, zooish.d_model))
    save_probe(LinearProbe().fit(X, np.arange(20) % 2), probe_dir, site="resid_post.0")
    _one_line_error(capsys, [*base, "--probe", str(probe_dir), "--run-id", "p"], "bad probe site")
    _one_line_error(capsys, [*base, "--probe", str(tmp_path / "nothing"), "--run-id", "q"], "bad probe folder")


def test_cli_on_the_zoo_and_its_config_json_reruns_it(capsys, reasoner, tmp_path):
    out_dir = tmp_path / "lynx" / "cli"
    argv = ["run", "lynx", "--model", reasoner.name, "--out", str(out_dir), "--no-progress", "--n-train", "30",
            "--n-calibration", "30", "--n-test", "30", "--max-steps", "2", "--hidden-layer-sizes", "16",
            "--deltas", "0.2,0.3", "--skip-vacuous", "--threads", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"run: {out_dir}" in out and "first_cue" in out and "P(S={1}|y=0)" in out
    assert (out_dir / "results" / "per_delta.json").is_file()
    # the folder's config.json reproduces the run (every stage is read back from the cache)
    assert main(["run", "lynx", "--config", str(out_dir / "config.json"), "--out", str(out_dir), "--no-progress"]) == 0
    assert capsys.readouterr().out == out


def test_skipped_deltas_exits_and_findings_agree_across_the_result(reasoner, tmp_path):
    # the result's skipped_deltas were once always () while the summary listed the skipped ones; n_exit counted
    # y=0 events with the set {1}; the summary had no findings. delta 0.01 needs 99 calibration events per class.
    fields = SMALL | dict(deltas=(0.01, 0.3))
    result = run_lynx(reasoner, tmp_path, "skips", **fields)
    doc = json.loads((tmp_path / "lynx" / "skips" / "results" / "lynx.json").read_text())
    assert doc["summary"]["skipped_deltas"] == [0.01] == doc["skipped_deltas"] == list(result.report.skipped_deltas)
    assert RunFolder.open(tmp_path / "lynx" / "skips").meta()["summary"]["skipped_deltas"] == [0.01]
    (row,) = result.per_delta
    o = result.report.get("lynx", 0.3)
    assert row["n_exit"] == int((o.exit_event >= 0).sum()) and row["n_rollouts"] == 40
    assert row["n_neg_set_one"] == int(result.validity.n_neg_set_one[0]) and "exact 95% interval" in row["validity"]
    # findings: only deltas in 0.05-0.1, so none here but the discrimination gate's; the probe's validation split is
    # grouped by rollout
    assert [f["statistic"] for f in result.summary["findings"]] == ["AUROC"]
    assert result.summary["probe"]["split"] == "grouped by rollout" and result.summary["probe"]["n_val_rollouts"] > 0


def test_the_discrimination_gate_is_measured_and_an_uninformative_probe_abstains(straight, reasoner, tmp_path):
    """The run measures its probe's AUROC at the calibration split's cue events (the summary's ``exit_gate``);
    a probe whose scores say nothing about the states (a linear probe fitted to random labels) keeps the gate closed,
    so LYNX makes no exit at any delta (saving 0, accuracy that of the full rollouts) and the findings open with one
    line that says so, with the AUROC and its interval. With the gate off the same probe exits."""
    _, done, result, _ = straight
    gate = result.summary["exit_gate"]  # SMALL turns the gate off: measured, never closed
    assert gate["min_auroc"] is None and gate["open"] is True and gate["events"] == "the calibration split's cue events"
    assert gate["n_pos"] + gate["n_neg"] == result.summary["splits"]["calibration"]["cue_events"]
    assert RunFolder.open(done.path).meta()["summary"]["exit_gate"] == gate
    sites = result.summary["sites"]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, len(sites) * reasoner.d_model))
    save_probe(LinearProbe().fit(X, rng.integers(0, 2, 200)), tmp_path / "noise", site=sites)
    fields = SMALL | dict(n_calibration=200, deltas=(0.2, 0.3), probe=str(tmp_path / "noise"), gate_auroc=0.5)
    closed = run_lynx(reasoner, tmp_path, "closed", **fields)
    g = closed.summary["exit_gate"]
    assert g["open"] is False and g["min_auroc"] == 0.5 and closed.summary["findings"][0]["statistic"] == "AUROC"
    full = closed.report.get("full").accuracy
    assert all(r["n_exit"] == 0 and r["saving"] == 0 and r["accuracy"] == full for r in closed.per_delta)
    line = JOB.report(closed).splitlines()
    said = [s for s in line if s.startswith("LYNX abstains: no exits at any delta (saving 0, accuracy unchanged)")]
    assert len(said) == 1 and f"AUROC {g['auroc']:.3g}" in said[0] and f"[{g['ci'][0]:.3g}, {g['ci'][1]:.3g}]" in said[0]
    assert "abstained (no exits)" in JOB.headline(RunFolder.open(tmp_path / "lynx" / "closed").meta()["summary"],
                                                  tmp_path / "lynx" / "closed")
    off = run_lynx(reasoner, tmp_path, "off", **fields | dict(gate_auroc=None))
    assert off.summary["exit_gate"]["open"] is True and any(r["n_exit"] > 0 for r in off.per_delta)
