"""The latent jobs: options and help from the configs, the method table, the run-folder kinds the app reads,
the latent-seek and latent-eval jobs end to end on a tiny model, doctests."""

import doctest
import importlib
import json

import pytest

from thinklens.cli import build_parser
from thinklens.errors import ThinklensError
from thinklens.latent.config import CODIConfig, EvalConfig, LatentSeekConfig
from thinklens.latent.methods import METHODS, method_named, method_of
from thinklens.runs.jobs import get_job, run_job

MODULES = ["thinklens.latent.config", "thinklens.latent.segments", "thinklens.latent.lsft_layout",
    "thinklens.latent.continuous_thought", "thinklens.latent.coconut",
           "thinklens.latent.codi", "thinklens.latent.latent_sft", "thinklens.latent.latentseek", "thinklens.latent.methods",
           "thinklens.latent.latent_model",
           "thinklens.latent.training_loop", "thinklens.latent.evaluate", "thinklens.latent.figures",
           "thinklens.latent.saved_model", "thinklens.latent.session",
           "thinklens.latent.examples", "thinklens.latent.seek_runs", "thinklens.latent.self_reward", "thinklens.latent.best_of_n",
           "thinklens.latent.jobs.trainers", "thinklens.latent.jobs.latent_seek",
           "thinklens.latent.jobs.latent_eval", "thinklens.latent.latent_findings", "thinklens.latent.sft"]
JOBS = {"codi": "codi", "coconut": "coconut", "latent-sft": "latent-sft", "sft": "sft",  # runs/<job>/<id>, as every job
        "latent-seek": "latent-seek", "latent-eval": "latent-eval"}


def _parse(argv):
    return build_parser([argv[1]]).parse_args(argv)


def test_options_and_help_come_from_the_configs(capsys):
    a = _parse(["run", "codi", "--n-latents", "4", "--no-projection", "--w-kd", "0", "--publish", "data/zoo/x"])
    job = get_job(a.job)
    cfg = job.make_config(**{k: getattr(a, k) for k in ("n_latents", "projection", "w_kd", "publish")})
    assert cfg == CODIConfig(n_latents=4, projection=False, w_kd=0.0, publish="data/zoo/x")
    with pytest.raises(SystemExit):
        _parse(["run", "codi", "--help"])
    out = capsys.readouterr().out
    assert "Latent steps between <bot> and <eot>" in out and "--device" in out and "--out" in out
    a = _parse(["run", "latent-seek", "--rho", "0.1", "--variant", "sample", "--device", "cpu"])
    assert a.rho == 0.1 and a.variant == "sample"
    assert _parse(["run", "latent-eval", "--models", "tiny-cot,tiny-codi"]).models == ("tiny-cot", "tiny-codi")


def test_jobs_write_the_run_folder_kinds_the_app_reads():
    assert {name: get_job(name).run_kind for name in JOBS} == JOBS
    assert all(get_job(name).config is m.config for name, m in METHODS.items())


def test_the_method_table_names_each_method_once():
    assert {method_of(m.config()).name for m in METHODS.values()} == set(METHODS)
    for m in METHODS.values():
        mod = m.module
        for fn in ("train_phases", "build_trainer", "build_for_inference", "infer_examples", "side_modules", "label_tags"):
            assert callable(getattr(mod, fn)), (m.name, fn)
    with pytest.raises(ThinklensError, match="did you mean"):
        method_named("cod")


def test_latent_seek_and_eval_jobs_end_to_end(zoo_like_dir, tmp_path):
    model = str(zoo_like_dir)
    seek = dict(model=model, n_eval=1, min_steps=2, max_steps=2, max_iters=1, max_new_tokens=8, rho=0.5, threshold=1.0)
    s = run_job("latent-seek", **seek, runs=tmp_path, run_id="s", progress=False)
    folder = tmp_path / "latent-seek" / "s"
    assert s["n"] == 1 and len(s["accuracy_by_budget"]) == 2
    assert set(s["baseline"]) == {"0.5", "1.0"}  # the oracle best-of-N on the same problems, N = 1 + max_iters
    assert all(b["samples"] == 2 and len(b["greedy_or_samples_by_budget"]) == 2 for b in s["baseline"].values())
    (problem,) = json.loads((tmp_path / "latent-seek" / "s" / "results" / "seek.json").read_text())["problems"]
    assert {t: len(c) for t, c in problem["baseline"].items()} == {"0.5": 2, "1.0": 2}
    assert (folder / "results" / "seek.json").is_file() and json.loads((folder / "meta.json").read_text())["status"] == "done"
    again = run_job("latent-seek", config_file=folder / "config.json", runs=tmp_path, run_id="s", progress=False)
    assert again == s  # the run folder's config.json reruns (here: resumes) the run
    t = run_job("latent-eval", model=model, models=(), n_eval=1, min_steps=2, max_steps=2, seek_n=1, seek_min_steps=2,
                seek_max_steps=2, decode_examples=1, runs=tmp_path, run_id="t", progress=False)
    assert [r["method"] for r in t["rows"]] == ["cot", "cot", "latentseek", "best_of_n", "best_of_n"]
    table = tmp_path / "latent-eval" / "t"
    assert {p.stem for p in (table / "results").glob("*.json")} >= {"table", "decoding", "seek"}
    assert {"accuracy", "seek_budget"} <= {p.stem for p in (table / "figures").glob("*.json")}


def _write_meta(folder, name, meta):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / name).write_text(json.dumps(meta))
    return str(folder)


def test_train_time_adds_every_parent_back_to_the_shared_init(tmp_path):
    from thinklens.latent.evaluate import lineage_train_s

    root = _write_meta(tmp_path / "pre", "zoo.json", {"train_wall_s": 900.0})  # the shared init: not counted
    cot = _write_meta(tmp_path / "cot", "zoo.json", {"init": root, "train_wall_s": 100.0})
    first = _write_meta(tmp_path / "first", "latent.json", {"method": "codi", "train_wall_s": 50.0,
                                                           "start_model": {"name": cot}, "parent": cot})
    # a continued run: its start model (the first run's folder) may be gone; its parent and totals carry the chain
    cont = _write_meta(tmp_path / "cont", "latent.json", {"method": "codi", "train_wall_s": 20.0, "total_train_wall_s": 70.0,
                                                         "start_model": {"name": str(tmp_path / "gone")}, "parent": cot})
    assert [lineage_train_s(m) for m in (root, cot, first, cont)] == [0.0, 100.0, 150.0, 170.0]
    lost = _write_meta(tmp_path / "lost", "latent.json", {"method": "codi", "train_wall_s": 5.0,
                                                         "start_model": {"name": str(tmp_path / "gone")}})
    assert lineage_train_s(lost) is None  # an unknown time on the chain is unknown, not 0


def test_explicit_cot_mode_scores_a_latent_models_lm_as_a_token_level_model(tmp_path):
    t = run_job("latent-eval", models=("tiny-cot",), explicit=("tiny-codi",), n_eval=2, min_steps=3, max_steps=3, seek_n=0,
                decode_examples=1, runs=tmp_path, run_id="x", progress=False)
    cot, explicit = t["rows"]
    assert explicit["method"] == "explicit" and explicit["label"].startswith("CODI in explicit-CoT mode")
    assert explicit["latent_steps"] == 0 and explicit["reasoning_positions"] > 10  # it writes its chain
    assert explicit["train_s"] > cot["train_s"] > 0  # tiny-codi's time includes tiny-cot's


def test_two_models_under_one_label_keep_their_own_rows_and_findings(tmp_path):
    """tiny-codi and a copy of its folder: one label, two rows. Each gets its folder's name and its own finding against
    tiny-direct (mutant killed: labels left as they are, so the findings keyed by label mix the rows)."""
    import shutil

    from thinklens.zoo.registry import zoo_path

    copy = shutil.copytree(zoo_path("tiny-codi"), tmp_path / "codi-copy")
    t = run_job("latent-eval", models=("tiny-direct", "tiny-codi", str(copy)), n_eval=2, min_steps=3, max_steps=3,
                seek_n=0, decode_examples=0, runs=tmp_path, run_id="x", progress=False)
    labels = [r["label"] for r in t["rows"]]
    assert labels[1].endswith("[tiny-codi]") and labels[2].endswith("[codi-copy]") and labels[1][:-11] == labels[2][:-11]
    claims = [f["claim"] for f in t["findings"] if f["claim"].startswith(labels[1][:-11]) and f["control"] == labels[0]]
    assert len(claims) == len(set(claims)) == 2 and {c.split(" beats")[0] for c in claims} == set(labels[1:])


def test_latent_table_findings_are_paired_against_no_cot_and_printed_by_the_cli(tmp_path):
    """tiny-codi against tiny-direct on the same 12 problems: the finding is McNemar's on the per-problem grades (an
    oracle recomputed here from decoding-free records), every row has its Wilson interval, and the CLI prints the
    verdict (mutants killed: an unpaired comparison; findings missing from the summary the Home card reads).
    tiny-direct is not tiny-codi's matched No-CoT (250 steps from tiny-pre): the comparison says so and comes after
    the finding that the table has no matched one."""
    import subprocess
    import sys

    from thinklens.calibration.stats import mcnemar, wilson

    out = subprocess.run([sys.executable, "-m", "thinklens.cli", "run", "latent-eval", "--models", "tiny-direct,tiny-codi",
                          "--n-eval", "12", "--min-steps", "3", "--max-steps", "3", "--seek-n", "0", "--decode-examples", "12",
                          "--threads", "1", "--out", str(tmp_path / "t")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    missing, f = meta["summary"]["findings"]
    assert missing["verdict"] == "too few samples" and missing["extra"]["baseline"] == "missing"
    assert f["control"] == "No-CoT SFT (tiny-direct)" and f["n"] == 12 and f["extra"]["test"] == "mcnemar"
    assert f["extra"]["baseline"] == "unmatched" and "trained from tiny-pre, not tiny-cot" in f["extra"]["unmatched"]
    decoding = json.loads((tmp_path / "t" / "results" / "decoding.json").read_text())
    direct = [d["methods"]["tiny-direct"]["correct"] for d in decoding]
    codi = [d["methods"]["tiny-codi"]["correct"] for d in decoding]
    assert f["p"] == pytest.approx(mcnemar(codi, direct), abs=1e-6) and f["value"] == pytest.approx(sum(codi) / 12)
    for row in json.loads((tmp_path / "t" / "results" / "table.json").read_text()):
        k = round(row["accuracy"] * row["n"])
        assert row["ci"] == pytest.approx(list(wilson(k, row["n"])))
    unmatched = "beats No-CoT SFT (tiny-direct) on the same 3-3 steps problems (an unmatched No-CoT"
    assert f"  [{f['verdict']}] " in out.stdout and unmatched in out.stdout


@pytest.mark.parametrize("bad", [dict(models=()), dict(n_eval=0), dict(min_steps=3, max_steps=2)])
def test_bad_eval_configs(bad):
    with pytest.raises(ThinklensError, match="fix"):
        EvalConfig(**bad)
    with pytest.raises(ThinklensError, match="fix"):
        LatentSeekConfig(rho=2.0)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0
