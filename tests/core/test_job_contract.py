"""The job contract: every registered job gets the same options, configs round-trip through run folders,
and the runner's precedence, resume and model loading behave the same for every job."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

from thinklens.cli import build_parser, main
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, to_jsonable
from thinklens.runs.jobs import Job, RunOptions, all_jobs, get_job, job_names, read_config_file, run_job

COMMON = ["--model", "--seed", "--device", "--dtype", "--threads", "--runs", "--run-id", "--out", "--no-progress", "--config"]


@dataclass(frozen=True)
class ToyConfig:
    """A job for these tests."""

    model: str = "m0"
    """Model name."""
    seed: int = 0
    """Seed."""
    n: int = 2
    """How many."""
    words: tuple[str, ...] = ("a", "b")
    """Words."""
    scale: float = 1.0
    """A float."""
    other: str | None = None
    """A second model (optional)."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ThinklensError.of("n", self.n, "an integer >= 1", "pass --n 2")


class FakeModel:
    def __init__(self, name: str, options: RunOptions):
        self.name, self.device = name, options.device


def toy_run(config: ToyConfig, ctx):
    out = {"n": config.n, "model": ctx.model.name, "device": ctx.model.device, "words": list(config.words),
           "loaded": sorted(ctx.models), "sibling": ctx.load("m9").name}
    for item in ctx.run.pending([f"i{k}" for k in range(config.n)]):
        ctx.run.mark_done(item)
    return out


TOY = Job("toy", ToyConfig, toy_run, help="toy", models=("model", "other"), load=FakeModel,
          presets={"big": ToyConfig(n=5, scale=2.0)})


def test_registry_has_every_job_with_the_common_options():
    names = job_names()
    assert "mi-peaks" in names
    parser_jobs = build_parser()._subparsers._group_actions[0].choices["run"]._subparsers._group_actions[0].choices
    for job in all_jobs():
        help_text = parser_jobs[job.name].format_help()
        missing = [o for o in COMMON if o not in help_text]
        assert not missing, f"{job.name} --help lacks {missing}"
        assert dataclasses.is_dataclass(job.config) and job.config.__dataclass_params__.frozen


@pytest.mark.parametrize("name", job_names())
def test_default_config_round_trips_through_config_json(name, tmp_path):
    job = get_job(name)
    cfg = job.config()
    f = tmp_path / "config.json"
    f.write_text(json.dumps(to_jsonable(cfg)))
    assert job.make_config(config_file=f) == cfg


def test_precedence_defaults_preset_file_options(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"n": 7, "words": ["x"]}))
    assert TOY.make_config().n == 2
    assert TOY.make_config(preset="big").n == 5
    cfg = TOY.make_config(preset="big", config_file=f)
    assert (cfg.n, cfg.words, cfg.scale) == (7, ("x",), 2.0)
    assert TOY.make_config(preset="big", config_file=f, n=3).n == 3


def test_bad_config_inputs_are_clear_errors(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"nn": 7}))
    with pytest.raises(ThinklensError, match="did you mean 'n'"):
        TOY.make_config(config_file=f)
    f.write_text("{not json")
    with pytest.raises(ThinklensError, match="valid JSON"):
        read_config_file(ToyConfig, f)
    with pytest.raises(ThinklensError, match="preset"):
        TOY.make_config(preset="huge")
    with pytest.raises(ThinklensError, match="integer >= 1"):
        TOY.make_config(n=0)
    with pytest.raises(ThinklensError, match="did you mean"):
        get_job("mi-peak")


def test_runner_loads_models_runs_and_resumes(tmp_path):
    r = run_job(TOY, model="m1", other="m2", n=3, device="meta", runs=tmp_path, run_id="r", progress=False)
    assert r == {"n": 3, "model": "m1", "device": "meta", "words": ["a", "b"], "loaded": ["model", "other"], "sibling": "m9"}
    run = RunFolder.open(tmp_path / "toy" / "r")
    meta = run.meta()
    assert meta["status"] == "done" and meta["job"] == "toy" and meta["options"]["device"] == "meta"
    assert sorted(run.finished()) == ["i0", "i1", "i2"]
    # the same id with the same config resumes; another config is refused
    run_job(TOY, model="m1", other="m2", n=3, runs=tmp_path, run_id="r", progress=False)
    with pytest.raises(ThinklensError, match="same config to resume"):
        run_job(TOY, model="m1", n=4, runs=tmp_path, run_id="r", progress=False)
    # a loaded model object is used as it is and its name recorded; --out is exactly the folder
    given = FakeModel("mine", RunOptions())
    r = run_job(TOY, model=given, out=tmp_path / "exact", progress=False)
    assert r["model"] == "mine" and json.loads((tmp_path / "exact" / "config.json").read_text())["model"] == "mine"


def test_config_json_reproduces_a_run(tmp_path):
    run_job(TOY, model="m1", n=4, words=("p", "q"), runs=tmp_path, run_id="a", progress=False)
    cfg_file = tmp_path / "toy" / "a" / "config.json"
    again = TOY.make_config(config_file=cfg_file)
    assert again == ToyConfig(model="m1", n=4, words=("p", "q"))


def test_contract_refuses_configs_without_model_and_seed():
    @dataclass(frozen=True)
    class NoSeed:
        model: str = ""

    with pytest.raises(TypeError, match="seed"):
        Job("x", NoSeed, toy_run, help="x")

    @dataclass(frozen=True)
    class Clash:
        model: str = ""
        seed: int = 0
        device: str = "cpu"

    with pytest.raises(TypeError, match="clash"):
        Job("x", Clash, toy_run, help="x")


def test_cli_errors_exit_2_without_traceback(capsys):
    assert main(["run", "mi-peaks", "--n-problems", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Traceback" not in err and "n_problems" in err
    with pytest.raises(SystemExit) as e:
        main(["run", "mi-peaks", "--dtype", "float8"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["run", "mi-peaks", "--n-problems", "many"])
    assert e.value.code == 2


def test_help_is_fast_and_imports_no_torch():
    code = "import sys, thinklens.cli as c; c.build_parser(c._jobs_to_load(['--help'])); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
    code = ("import sys, thinklens.cli as c; c.build_parser(None); "
            "print(sorted(m for m in ('torch', 'transformers', 'sklearn', 'sae_lens') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"loading every job config imported {out}"
