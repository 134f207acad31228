"""``make demo-real`` (tools/demo_real.py): every step is a command the CLI accepts with the options its job
declares, a step whose real model is absent is skipped with the install command and runs nothing, and the last
line is the demo's time against its budget."""

from __future__ import annotations

import dataclasses

import pytest

from thinklens import cli
from thinklens.runs.job_registry import get_job
from tools import demo_real


@pytest.mark.parametrize("step", demo_real.STEPS, ids=lambda s: s.name)
def test_each_step_parses_into_its_jobs_config(step, monkeypatch):
    seen = {}

    def fake_execute(job, config, options):  # parse and build the config as `thinklens run` does, run nothing
        seen["job"], seen["config"], seen["options"] = job.name, config, options
        raise SystemExit(0)

    monkeypatch.setattr(cli, "execute", fake_execute)
    with pytest.raises(SystemExit):
        cli.main(["run", step.kind, *step.argv, "--run-id", step.run_id, "--threads", demo_real.THREADS])
    assert seen["job"] == step.kind
    assert seen["options"].run_id == step.run_id
    fields = {f.name for f in dataclasses.fields(get_job(step.kind).config)}
    assert "model" in fields and seen["config"].model == step.argv[step.argv.index("--model") + 1]


def test_a_missing_model_skips_its_step_and_runs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(demo_real, "missing_models", lambda step: ["smollm2-135m"])
    monkeypatch.setattr(cli, "main", lambda argv: pytest.fail(f"ran {argv}"))
    assert demo_real.run_steps(tmp_path / "runs") == {}
    out = capsys.readouterr().out
    assert out.count("skipped: smollm2-135m not installed (run `make real`)") == len(demo_real.STEPS)


def test_the_headline_is_the_time_against_the_budget(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(demo_real, "run_steps", lambda runs: {"first": (0, 1.0), "second": (2, 1.0)})
    assert demo_real.main() == 1  # a failed step fails the demo
    captured = capsys.readouterr()
    assert "failed steps: second" in captured.err
    last = captured.out.strip().splitlines()[-1]
    assert last == f"demo_real_seconds=0 (budget {demo_real.BUDGET_S}: within)"
