"""The mi-peaks job end to end through the CLI: a tiny random model (format, resume, skips), the
zoo (every stage on the reasoning model and its siblings), a GSM8k JSONL input, errors, presets.
The real-model path (tiny-r1, chat template): test_mi_real_path.py."""

from __future__ import annotations

import json

import pytest

from thinklens.analyses.jobs.mi_peaks import MIPeaksJobConfig
from thinklens.analyses.mi.config import DEFAULT_ESTIMATOR
from thinklens.analyses.mi.pipeline import stage_names
from thinklens.analyses.mi.run_format import read_index, read_trajectory
from thinklens.cli import main
from thinklens.errors import ThinklensError
from thinklens.zoo.registry import zoo_path


def _zoo(*names: str) -> list[str]:
    have = [n for n in names if zoo_path(n) is not None]
    if not have:
        pytest.skip(f"none of {names} is trained")
    return have


def test_cli_job_on_a_random_model_writes_the_format_and_resumes(tiny_dirs, tmp_path, capsys) -> None:
    out = tmp_path / "runs" / "mi-peaks" / "t1"
    argv = ["run", "mi-peaks", "--model", str(tiny_dirs["llama"]), "--n-problems", "3", "--max-new-tokens", "6",
            "--k", "2", "--ci", "wilson", "--sites", "resid_post.-1,resid_post.0,resid_post.1", "--suppression",
            "--recycling", "--ttts", "--ttts-budgets", "0,2", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"run: {out}" in printed and "problems: 3" in printed
    index = read_index(out)
    (entry,) = index["models"]
    assert entry["site"] == "resid_post.1" and entry["sites"] == ["resid_post.1", "resid_post.0"]  # -1 == 1: once
    assert entry["prompt_format"] == "plain" and entry["n"] == 3 and len(entry["index"]) == 3
    ref = next(r for r in entry["controls"] if r["estimator"] == "reference")
    for rule in ("peak", "iqr_peak"):  # the peak-set Jaccard own vs shuffled answer, with its chance level
        assert 0 <= ref[f"{rule}_jaccard_chance"] <= 1 and 0 <= ref[f"{rule}_jaccard_shuffled"] <= 1
    # nHSIC vs its small-scale limit rho^2 and the kernel's scale, for the fixed sigma scored next to the default
    small = entry["small_scale"]
    assert small["estimator"] == "reference" and small["n_steps"] == sum(r["n_tokens"] for r in entry["index"])
    assert 0 <= small["mean_corr2"] <= 1 and 0 <= small["answer_corr2"] <= 1 and small["answer_nhsic_self"] > 0
    for row in entry["index"]:
        rec = read_trajectory(out, entry["key"], row["i"])
        n = len(rec.tokens)
        assert row["n_tokens"] == n and rec.prompt.endswith("?")  # plain: the question as written
        assert set(rec.variants) == set(rec.shuffled) == {"reference", "median_sigma", "l2"}
        assert rec.variants[DEFAULT_ESTIMATOR] == rec.mi["resid_post.1"] and len(rec.norms) == n  # the default drives
        assert rec.shuffled_answer_of != rec.index
        assert len(rec.peaks["top_k"]) == min(2, n) and set(rec.peaks) == {"top_k", "iqr", "top_k_specific"}
        assert len(rec.peaks["top_k_specific"]) == min(2, n)  # the same rule on own minus shuffled MI
        assert set(rec.small_scale) == {"corr2", "corr2_shuffled", "approx", "approx_shuffled", "scale"}
    figures = {p.stem for p in (out / "figures").glob("*.json")}
    assert {"overlay", "overlay-step", "controls", f"sites-{entry['key']}"} <= figures
    # the word tokenizer (w0, w1, ...) has no alphabetic token: the interventions say why they were skipped
    for stage in ("suppression", "recycling", "ttts"):
        assert "no thinking words" in json.loads((out / "results" / f"{stage}.json").read_text())["skipped"]
    assert json.loads((out / "meta.json").read_text())["status"] == "done"
    before = (out / "results" / "mi_models.json").stat().st_mtime_ns
    assert main(argv) == 0  # same command: every stage is done, nothing is recomputed
    assert (out / "results" / "mi_models.json").stat().st_mtime_ns == before


def test_zoo_job_reasoning_vs_siblings_with_every_stage(tmp_path, capsys) -> None:
    models = _zoo("tiny-think", "tiny-cot", "tiny-direct")
    if models[0] != "tiny-think":
        pytest.skip("tiny-think is not trained")
    out = tmp_path / "mi"
    argv = ["run", "mi-peaks", "--preset", "demo", "--compare", ",".join(models[1:]), "--n-problems", "6",
            "--max-steps", "3", "--max-new-tokens", "48", "--sites", "resid_post.-1,resid_post.1",
            "--estimators", "reference,l2", "--ci", "wilson", "--n-random", "1", "--rr-layers", "1",
            "--ttts-budgets", "0,4", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    index = read_index(out)
    assert [m["name"] for m in index["models"]] == models
    styles = {m["name"]: m["style"] for m in index["models"]}
    assert styles["tiny-think"] == "think" and styles.get("tiny-cot", "cot") == "cot"
    think = index["models"][0]
    rec = read_trajectory(out, "tiny-think", 0)
    assert rec.prompt.endswith("<think>") and rec.solution.startswith("<<")  # gold text: the cot rendering
    assert set(rec.mi) == {"resid_post.3", "resid_post.1"} and think["n_layers"] == 4
    assert 0 < think["peak_fraction"]["top_k"] <= 1 and think["accuracy"] > 0
    enrichment = json.loads((out / "results" / "enrichment.json").read_text())
    words = enrichment["tiny-think"]["words"]["top_k"]
    assert words["n_trajectories"] == 6 and all(w["word"].isalpha() for w in words["words"])
    every = enrichment["tiny-think"]["all"]["top_k"]["words"]
    assert sum(w["peak_count"] for w in every) == words["n_peak_tokens"]  # every peak token counted once
    sup = json.loads((out / "results" / "suppression.json").read_text())
    if "skipped" not in sup:  # the zoo's think traces carry alphabetic words ("so", "therefore")
        assert [r["condition"] for r in sup["rows"]] == ["none", "thinking", "random_0"]
        assert sup["rows"][1]["n_ids"] == sup["rows"][2]["n_ids"] == len(sup["thinking_ids"])
        rr = json.loads((out / "results" / "recycling.json").read_text())
        assert [r["layer"] for r in rr["rows"]] == [3, 1] and rr["rows"][0]["probability"] == 0.5
        ttts = json.loads((out / "results" / "ttts.json").read_text())
        assert {(r["method"], r["budget"]) for r in ttts["rows"]} >= {("plain", 0), ("plain", 4)}
    summary = json.loads((out / "meta.json").read_text())["summary"]
    assert set(summary["models"]) == set(models)
    assert "tiny-think (think): accuracy" in capsys.readouterr().out


def test_gsm8k_jsonl_input(tmp_path) -> None:
    from thinklens.tasks import generate_problems

    name = _zoo("tiny-cot")[0]
    data = tmp_path / "gsm.jsonl"
    lines = []
    for p in generate_problems(4, seed=7):  # GSM8k format: natural question, "<<a+b=c>>c ... #### n"
        sol = " ".join(f"<<{s.left}{s.op}{s.right}={s.result}>>{s.result}" for s in p.steps) + f"\n#### {p.answer}"
        lines.append(json.dumps({"question": p.question, "answer": sol}))
    data.write_text("\n".join(lines) + "\n\n")
    out = tmp_path / "runs" / "mi-peaks" / "gsm"
    assert main(["run", "mi-peaks", "--model", name, "--data", str(data), "--n-problems", "10",
                 "--estimators", "reference", "--k", "2", "--max-new-tokens", "40", "--ci", "wilson",
                 "--out", str(out), "--no-progress"]) == 0
    (entry,) = read_index(out)["models"]
    assert entry["n"] == 4 and entry["prompt_format"] == "cot" and entry["style"] == "cot"  # all 4 lines used
    rec = read_trajectory(out, name, 0)
    assert rec.prompt.endswith("steps :") and " . " in rec.prompt  # the question in the zoo's spaced form
    assert rec.solution.endswith(f"#### {rec.answer}") and "<< " in rec.solution
    assert entry["accuracy"] > 0  # the zoo answers GSM8k-format questions of its own task


def test_cli_bad_input_exits_2(tmp_path, capsys) -> None:
    assert main(["run", "mi-peaks", "--estimators", "refrence", "--out", str(tmp_path / "x" / "y")]) == 2
    assert "estimators" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    assert main(["run", "mi-peaks", "--model", _zoo("tiny-cot", "tiny-think", "tiny-pre")[0], "--data", str(bad),
                 "--out", str(tmp_path / "r" / "z"), "--no-progress"]) == 2
    assert "no answer field" in capsys.readouterr().err


def test_config_validation_and_stages() -> None:
    with pytest.raises(ThinklensError, match="peak rule"):
        MIPeaksJobConfig(peak_rule="mad")
    with pytest.raises(ThinklensError, match="n_problems"):
        MIPeaksJobConfig(n_problems=1)
    with pytest.raises(ThinklensError, match="prompt_formats"):
        MIPeaksJobConfig(compare=("tiny-cot",), prompt_formats=("think",))
    with pytest.raises(ThinklensError, match="compare"):
        MIPeaksJobConfig(compare=("tiny-think",))
    with pytest.raises(ThinklensError, match="gold_format"):
        MIPeaksJobConfig(gold_format="essay")
    assert stage_names(MIPeaksJobConfig(model="/m/a", compare=("/n/a",), recycling=True)) == [
        "trajectories:a", "trajectories:a-2", "enrichment", "comparison", "recycling"]


@pytest.mark.slow
def test_demo_preset_on_the_zoo_end_to_end(tmp_path, capsys) -> None:
    """`thinklens run mi-peaks --preset demo` (what `make demo` calls): every stage, three models."""
    import time

    if any(zoo_path(n) is None for n in ("tiny-think", "tiny-cot", "tiny-direct")):
        pytest.skip("the demo compares tiny-think with tiny-cot and tiny-direct")
    out = tmp_path / "runs" / "mi-peaks" / "demo"
    t0 = time.perf_counter()
    assert main(["run", "mi-peaks", "--preset", "demo", "--out", str(out), "--no-progress"]) == 0
    wall = time.perf_counter() - t0
    print(f"mi_demo_s={wall:.1f}")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "done" and set(meta["summary"]["models"]) == {"tiny-think", "tiny-cot", "tiny-direct"}
    for stage in ("suppression", "recycling", "ttts"):
        assert meta["summary"][stage] is not None, stage  # the zoo has thinking words: nothing skipped
    assert len(json.loads((out / "results" / "recycling.json").read_text())["rows"]) == 4  # layer 3, then 0, 1, 2
    assert (out / "trajectories" / "tiny-direct" / "00059.json").is_file()
