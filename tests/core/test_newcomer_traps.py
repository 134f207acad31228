"""Traps a newcomer fell into, each pinned: a problem set's problems render through ``render_all``
like any problem; an exception from a user's hook says which site it ran on; a job config's step range is never
overridden by a default problem source, and a ``synthetic:MIN-MAX`` source that disagrees with it is refused naming
both; LYNX calls where its states come from ``sites``, as every job does (``--layers`` a deprecated alias)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
import torch

from thinklens.data.formats import PromptFormat
from thinklens.data.problemsets import DataOptions, ProblemSet, RealProblem
from thinklens.engine.hooks import site_hooks
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.runs.jobs import all_jobs, get_job
from thinklens.tasks import StepRange


def test_render_all_takes_a_problem_sets_problems():
    synthetic = list(ProblemSet.synthetic(1, seed=0, min_steps=2, max_steps=2))
    real = RealProblem("r", "What is 2+2?", "4")
    plain = PromptFormat("plain")
    assert plain.render_all([real]) == ["What is 2+2?"] == [plain.render(real)]
    think = PromptFormat("think")
    # a zoo style renders a synthetic problem from its ground truth, as render_problems always did
    assert think.render_all(synthetic) == think.render_problems(synthetic) == [think.render(synthetic[0].ground_truth)]
    assert think.render_all([real])[0].endswith("<think>")


def test_a_hook_that_raises_names_its_site_and_leaves_no_hook(tiny_models):
    m = tiny_models["llama"]
    ids = torch.tensor([[1, 2, 3]])

    def broken(act, ctx):
        raise ValueError("boom")

    n_hooks = sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.hf.modules())
    with pytest.raises(ValueError, match="boom") as info:
        with site_hooks(m, [(Site("resid_post", 1), broken)]):
            m.hf(ids)
    assert any("resid_post.1" in note and "broken" in note for note in info.value.__notes__), info.value.__notes__
    assert sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.hf.modules()) == n_hooks


# ---------------------------------------------------------------------------------------------- one step range

def _step_range_jobs() -> list[str]:
    return sorted(j.name for j in all_jobs() if {"data", "min_steps", "max_steps"} <= {f.name for f in dataclasses.fields(j.config)})


def test_a_new_job_config_draws_its_problems_from_its_step_range():
    @dataclass(frozen=True)
    class Mine(DataOptions, StepRange):  # what a newcomer writes: the two groups, no redeclared default
        model: str = ""
        seed: int = 0

    assert Mine().data == ""  # no default source that would outrank --min-steps/--max-steps
    drawn = Mine(min_steps=5, max_steps=6).problems(20, seed=0)
    assert {p.metadata["n_steps"] for p in drawn} == {5, 6}


@pytest.mark.parametrize("name", _step_range_jobs())
def test_every_job_with_a_step_range_defaults_to_it(name):
    job = get_job(name)
    assert job.make_config().data == "", f"{name}'s default --data would ignore --min-steps/--max-steps"


@pytest.mark.parametrize("name", _step_range_jobs())
def test_a_synthetic_source_and_another_step_range_are_refused_naming_both(name):
    job = get_job(name)
    default = {f.name: f.default for f in dataclasses.fields(job.config)}
    low, high = default["min_steps"], default["max_steps"]
    with pytest.raises(ThinklensError, match=r"data / max_steps.*synthetic:1-1.*max_steps=" + str(high + 1)):
        job.make_config(data="synthetic:1-1", max_steps=high + 1)
    with pytest.raises(ThinklensError, match=r"data / min_steps / max_steps"):
        job.make_config(data=f"synthetic:{low}-{high + 2}", min_steps=low + 1, max_steps=high + 1)
    if name in ("codi", "coconut", "latent-sft", "sft"):
        return  # a trainer refuses any synthetic: source (the held-out problems), agreeing or not
    # agreeing with the source, or leaving the step fields at their defaults, is no conflict
    assert job.make_config(data=f"synthetic:{low}-{high + 1}", max_steps=high + 1).max_steps == high + 1
    assert job.make_config(data="synthetic:1-1").data == "synthetic:1-1"


def test_cli_refuses_a_synthetic_source_against_the_step_options_in_one_line(tmp_path, capsys):
    from thinklens.cli import main

    out = tmp_path / "run"
    assert main(["run", "probe", "--data", "synthetic:2-4", "--min-steps", "3", "--max-steps", "6", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "--data" in err and "--min-steps" in err and "--max-steps" in err and not out.exists()


# ---------------------------------------------------------------------------------------------- LYNX sites

def test_lynx_calls_its_feature_places_sites_like_every_job():
    from thinklens.probes.lynx import lynx_sites

    fields = {f.name for f in dataclasses.fields(get_job("lynx").config)}
    assert "sites" in fields and "layers" not in fields
    assert "sites" in {f.name for f in dataclasses.fields(get_job("probe").config)}
    cfg = get_job("lynx").make_config(sites=("resid_post.1", "4"))
    assert [str(s) for s in lynx_sites(4, cfg.sites)] == ["resid_post.1", "final_norm"]  # names, or hidden-state indices
    with pytest.raises(ThinklensError, match="did you mean"):
        get_job("lynx").make_config(sites=("resid_pst.1",))


def test_lynx_layers_still_reads_with_one_warning(capsys, tmp_path):
    import json

    from thinklens.runs.jobs import read_config_file

    job = get_job("lynx")
    assert job.make_config(layers=(1, 4)).sites == ("1", "4")
    assert "layers= is deprecated; use sites=" in capsys.readouterr().err
    old = tmp_path / "config.json"  # a run folder's config.json written before the rename
    saved = json.loads(open("results/records/demo/lynx/demo/config.json").read())
    saved.pop("sites", None)  # the record is written by today's job: the old file named only layers
    old.write_text(json.dumps({**saved, "layers": [2, 4]}))
    cfg = job.make_config(**read_config_file(job.config, old))
    assert cfg.sites == ("2", "4") and "deprecated" in capsys.readouterr().err
    with pytest.raises(ThinklensError, match="only sites"):
        job.make_config(layers=(1,), sites=("2",))


def test_lynx_cli_takes_layers_as_a_deprecated_alias_of_sites(capsys):
    from thinklens.cli import main

    # --n-train 0 stops it at the config check, after the options are read
    assert main(["run", "lynx", "--layers", "1,2", "--n-train", "0"]) == 2
    err = capsys.readouterr().err
    assert "--layers is deprecated; use --sites" in err and "n_train" in err


# ---------------------------------------------------------------------------------------------- one name: prompt format

def test_the_prompt_format_has_one_name_in_the_python_api():
    import inspect

    import thinklens.data.formats as formats
    from thinklens.data.formats import format_for

    assert {f.name for f in dataclasses.fields(PromptFormat)} & {"name", "kind", "style"} == {"name"}
    assert list(inspect.signature(format_for).parameters)[:2] == ["model", "prompt_format"]
    assert not [n for n in vars(formats) if "KIND" in n or n.endswith("_kind") or "STYLE" in n]
    fmt = format_for("my-model", prompt_format="plain", tokenizer=None)
    assert fmt.name == "plain"
    with pytest.warns(DeprecationWarning, match="PromptFormat.name"):
        assert fmt.kind == "plain"  # code written before the rename still reads
    with pytest.warns(DeprecationWarning, match="prompt_format="):
        assert format_for("my-model", kind="plain", tokenizer=None) == fmt


def _format_options() -> list:
    out = []
    for job in all_jobs():
        for name in ("prompt_format", "base_format", "intention_formats", "gold_format", "prompt_formats"):
            if name in {f.name for f in dataclasses.fields(job.config)}:
                out.append(pytest.param(job.name, name, id=f"{job.name}-{name}"))
    return out


@pytest.mark.parametrize("job, option", _format_options())
def test_a_bad_prompt_format_is_refused_as_a_prompt_format(job, option):
    value = {"intention_formats": ("chta",), "prompt_formats": ("think", "chta")}.get(option, "chta")
    extra = {"compare": ("tiny-cot",)} if option == "prompt_formats" else {}
    with pytest.raises(ThinklensError) as info:
        get_job(job).make_config(**{option: value}, **extra)
    what = str(info.value).split("; expected")[0]  # "bad <what>: received ..."
    assert ("prompt format" in what or option in what.replace("-", "_")) and "style" not in what, str(info.value)
