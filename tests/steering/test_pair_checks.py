"""A reasoning vector between one checkpoint and itself (|v| = 0) is a one-line error (CLI exit 2), and a
hybrid whose thinking model is its base is flagged in its log, summary and report."""

from __future__ import annotations

import pytest

from thinklens.cli import main
from thinklens.errors import ThinklensError
from thinklens.runs.jobs import run_job
from thinklens.zoo.registry import zoo_dir, zoo_path


@pytest.fixture(scope="module")
def zoo():
    if any(zoo_path(n) is None for n in ("tiny-cot", "tiny-think", "tiny-pre")):
        pytest.skip("the zoo is not trained")
    return zoo_dir()


def test_reasoning_vector_with_a_equal_to_b_is_refused_before_any_load(zoo, tmp_path, capsys):
    from thinklens.steering.jobs.reasoning_vector import ReasoningVectorJobConfig

    with pytest.raises(ThinklensError, match=r"bad a / b: received \('tiny-cot', 'tiny-cot'\); expected two different"):
        ReasoningVectorJobConfig(a="tiny-cot", b="tiny-cot")
    assert main(["run", "reasoning-vector", "--a", "tiny-cot", "--b", "tiny-cot", "--runs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad --a / --b" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_reasoning_vector_of_two_names_of_one_checkpoint_is_refused(zoo, tmp_path, capsys):
    other_name = str(zoo / "tiny-cot")  # a path and a zoo name: one checkpoint, v = 0
    with pytest.raises(ThinklensError, match=r"\|v\| = 0.*expected two checkpoints whose weights differ"):
        run_job("reasoning-vector", a="tiny-cot", b=other_name, n_eval=0, save_alpha=None, runs=tmp_path, run_id="rv",
                progress=False)
    argv = ["run", "reasoning-vector", "--a", "tiny-cot", "--b", other_name, "--n-eval", "0", "--runs", str(tmp_path),
            "--run-id", "cli", "--no-progress"]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "|v| = 0" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_same_weights_tells_a_model_from_its_sibling(zoo):
    from thinklens import HookedModel
    from thinklens.steering.jobs.hybrid import same_weights

    think, cot = HookedModel.load("tiny-think"), HookedModel.load("tiny-cot")
    assert same_weights(think, think) and same_weights(think, HookedModel.load(str(zoo / "tiny-think")))
    assert not same_weights(think, cot)


def test_hybrid_with_the_thinking_model_as_its_base_is_flagged(zoo, tmp_path):
    from thinklens.steering.jobs.hybrid import report

    res = run_job("hybrid", model="tiny-think", thinking=str(zoo / "tiny-think"), n_train=2, n_eval=4, max_steps=2,
                  max_new_tokens=4, modes=("base", "thinking"), runs=tmp_path, run_id="same", progress=False)
    [flag] = res.summary["warnings"]
    assert flag.startswith("the thinking model is the base model") and "steering never fires" in flag
    assert f"warning: {flag}" in report(res.summary).splitlines()
    other = run_job("hybrid", model="tiny-cot", thinking="tiny-think", n_train=2, n_eval=4, max_steps=2,
                    max_new_tokens=4, modes=("base", "thinking"), runs=tmp_path, run_id="pair", progress=False)
    assert other.summary["warnings"] == [] and "warning:" not in report(other.summary)
