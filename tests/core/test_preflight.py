"""Bad input is refused before a model loads and leaves no run folder.

A data file that is missing or malformed used to be read inside the job, after the models loaded, and its refusal
left a failed run folder behind; ``steer --word`` was refused only after the model loaded and generated its traces.
The runner now runs each job's preflight (:func:`thinklens.runs.jobs.preflight`) first. Here every job with a
``data`` option is given a missing and a malformed file, with a loader that fails the test if it is called.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from thinklens.errors import ThinklensError
from thinklens.runs.jobs import all_jobs, get_job, run_job


def _data_jobs() -> list[str]:
    return sorted(j.name for j in all_jobs() if "data" in {f.name for f in dataclasses.fields(j.config)})


def _no_loads(job):
    def load(name, options):
        raise AssertionError(f"{job.name} loaded model {name} before refusing its input")

    return dataclasses.replace(job, load=load)


@pytest.fixture(autouse=True)
def no_hooked_loads(monkeypatch):
    from thinklens.engine.model import HookedModel

    def refuse(*a, **k):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(HookedModel, "load", refuse)


def test_every_job_with_problems_is_in_the_table():
    assert {"eval", "lynx", "probe", "mi-peaks", "sae", "sae-eval", "steer", "hybrid", "codi"} <= set(_data_jobs())


@pytest.mark.parametrize("name", _data_jobs())
@pytest.mark.parametrize("bad", ["missing", "malformed"])
def test_a_bad_data_file_is_refused_before_any_model_loads(name, bad, tmp_path):
    data = tmp_path / "problems.jsonl"
    if bad == "malformed":
        data.write_text('{"question": "1 + 1?", "answer": "2"}\n{"question": \n')
    extra = {"sae": "data/saes/tiny-think-resid_post.2-topk32"} if name in ("steer", "sae-eval") else {}
    with pytest.raises(ThinklensError, match="problems.jsonl" if bad == "missing" else None):
        run_job(_no_loads(get_job(name)), data=str(data), out=tmp_path / "run", progress=False, **extra)
    assert not (tmp_path / "run").exists(), f"{name} left a run folder for bad input"


def test_cli_refuses_a_bad_data_file_with_exit_2_and_no_folder(tmp_path, capsys):
    from thinklens.cli import main

    out = tmp_path / "run"
    assert main(["run", "eval", "--model", "tiny-cot", "--data", str(tmp_path / "nope.jsonl"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.jsonl" in err and "Traceback" not in err
    assert not out.exists()


def _sae_run(tmp_path, counts: dict[str, int]):
    """An `sae` run folder around the committed SAE, with saved feature statistics for ``counts``' words."""
    folder = tmp_path / "sae-run"
    shutil.copytree("data/saes/tiny-think-resid_post.2-topk32", folder / "sae")
    d = json.loads((folder / "sae" / "cfg.json").read_text())["d_sae"]
    stats = {"site": "resid_post.2", "n_traces": 4, "n_tokens": 100, "freq": [0.1] * d, "mean_act": [0.1] * d,
             "max_act": [1.0] * d, "corr_words": {w: [0.2] * d for w in counts}, "word_counts": counts,
             "corr_correct": None, "accuracy": None}
    (folder / "results").mkdir()
    (folder / "results" / "feature_stats.json").write_text(json.dumps(stats))
    return folder


@pytest.mark.parametrize("word, why", [("hmm", "a word the model writes")])
def test_steer_word_is_refused_from_the_saved_statistics_before_the_model_loads(word, why, tmp_path):
    sae = _sae_run(tmp_path, {"wait": 12, "hmm": 0})
    with pytest.raises(ThinklensError, match=why):
        run_job(_no_loads(get_job("steer")), sae=str(sae), word=word, out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_steer_preflight_passes_a_word_the_statistics_saw(tmp_path):
    from thinklens.runs.jobs import preflight

    job, sae = get_job("steer"), str(_sae_run(tmp_path, {"wait": 12, "hmm": 0}))
    preflight(job, job.make_config(sae=sae, word="Wait"))
    # a word the statistics did not score is scored once the model loads, not refused here
    preflight(job, job.make_config(sae=sae, word="zebra"))


# Inputs besides --data that a job reads: each was once read only after the model loaded.
# (job, option, extra arguments); the file given to the option is missing, malformed or empty.
OTHER_INPUTS = [
    ("probe", "--test-data", ("--target", "correct")),
    *((name, "--eval-data", ()) for name in ("codi", "coconut", "latent-sft", "sft")),
    ("hybrid", "--vector-data", ()),
    ("capture", "--prompts", ("--model", "tiny-think")),
    ("steer-vector", "--prompts", ()),
    ("steer-vector", "--prompts-a", ("--prompts-b", "data/real/sentiment_sets.json:negative")),
]
BAD_FILES = {"missing": None, "malformed": '{"question": "1 + 1?", "answer": "2"}\n{"question": \n', "empty": ""}


@pytest.mark.parametrize("job, option, extra", OTHER_INPUTS, ids=[f"{j}{o}" for j, o, _ in OTHER_INPUTS])
@pytest.mark.parametrize("bad", sorted(BAD_FILES))
def test_a_bad_input_file_is_refused_in_one_line_before_any_model_loads(job, option, extra, bad, tmp_path, capsys,
                                                                        monkeypatch):
    from thinklens.cli import main
    from thinklens.engine.model import HookedModel

    loads = []
    monkeypatch.setattr(HookedModel, "load", lambda *a, **k: loads.append(a) or pytest.fail("a model was loaded"))
    path = tmp_path / "inputs.jsonl"
    if BAD_FILES[bad] is not None:
        path.write_text(BAD_FILES[bad])
    out = tmp_path / "run"
    code = main(["run", job, option, str(path), *extra, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "inputs.jsonl" in err or "line 2" in err, err  # what was received: the file, or its bad line
    assert "expected" in err and "fix:" in err, err
    assert not loads and not out.exists()
