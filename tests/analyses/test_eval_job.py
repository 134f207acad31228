"""``thinklens run eval`` end to end: tiny-r1 with its chat template on a GSM8K-format file through the generic
path (graded by is_correct, tokens split at the thinking span), sampled runs, per-batch resume, groups."""

from __future__ import annotations

import json

import pytest

from thinklens.analyses.evaluation import summarize_eval
from thinklens.analyses.jobs.eval import EvalJobConfig
from thinklens.cli import main
from thinklens.data.answers import is_correct
from thinklens.errors import ThinklensError


def _rows(out):
    return json.loads((out / "results" / "eval_problems.json").read_text())


def _texts(out):
    return [r["text"] for f in sorted((out / "completions").glob("batch-*.json")) for r in json.loads(f.read_text())]


def test_eval_on_tiny_r1_with_its_chat_template_and_a_gsm8k_file(tiny_r1, gsm8k_file, tmp_path, capsys, no_zoo_branch):
    out = tmp_path / "eval"
    budget = 160 if tiny_r1 == "tiny-r1" else 48  # the trained organism's answers take 60-115 tokens
    argv = ["run", "eval", "--model", tiny_r1, "--data", str(gsm8k_file), "--prompt-format", "chat",
            "--max-new-tokens", str(budget), "--batch-size", "3", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert "(chat): accuracy" in capsys.readouterr().out
    summary = json.loads((out / "results" / "eval.json").read_text())
    n = len(gsm8k_file.read_text().splitlines())
    assert summary["prompt_format"] == "chat" and summary["thinking_span"] == "think" and summary["groups"] == []
    assert summary["overall"]["n"] == n and summary["decoding"] == {"greedy": True}
    rows, texts = _rows(out), _texts(out)
    assert [r["i"] for r in rows] == list(range(n)) and len(texts) == n
    gold = [json.loads(line)["answer"].rsplit("#### ", 1)[1] for line in gsm8k_file.read_text().splitlines()]
    for r, text in zip(rows, texts):
        assert r["gold"] == gold[r["i"]] and r["correct"] == is_correct(text, r["gold"])
        assert r["n_reasoning_tokens"] + r["n_answer_tokens"] <= r["n_tokens"] <= budget
        assert r["stop_reason"] in ("eos", "max_new_tokens")
    assert sum(summary["overall"]["stop_reasons"].values()) == n
    assert (out / "figures" / "eval.json").is_file()
    if tiny_r1 == "tiny-r1":  # the trained organism closes its span and boxes right answers
        assert summary["overall"]["accuracy"] >= 0.75 and summary["overall"]["closed_fraction"] == 1.0
        assert all(r["n_reasoning_tokens"] > r["n_answer_tokens"] > 0 for r in rows)
    before = (out / "completions" / "batch-00000.json").stat().st_mtime_ns
    assert main(argv) == 0  # the same command resumes: every batch is done, nothing is generated again
    assert (out / "completions" / "batch-00000.json").stat().st_mtime_ns == before


def test_sampled_eval_resumes_per_batch_and_groups_by_steps(tiny_r1, tmp_path, monkeypatch, no_zoo_branch):
    from thinklens.engine.model import HookedModel

    argv = ["run", "eval", "--model", tiny_r1, "--data", "synthetic:2-3:1", "--prompt-format", "chat",
            "--max-new-tokens", "24", "--temperature", "0.8", "--top-p", "0.95", "--samples", "2", "--batch-size", "1",
            "--seed", "5", "--no-progress"]
    whole = tmp_path / "whole"
    assert main([*argv, "--out", str(whole)]) == 0
    summary = json.loads((whole / "results" / "eval.json").read_text())
    assert summary["groups"] == ["n_steps"] and set(summary["by"]["n_steps"]) == {"2", "3"}
    assert summary["by"]["n_steps"]["2"]["n"] == 2 and summary["overall"]["n_problems"] == 2
    assert summary["decoding"] == {"temperature": 0.8, "top_p": 0.95, "samples": 2}

    real, calls = HookedModel.generate, {"n": 0}

    def dying(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    cut = tmp_path / "cut"
    monkeypatch.setattr(HookedModel, "generate", dying)
    assert main([*argv, "--out", str(cut)]) != 0  # the CLI reports the interruption
    assert len(list((cut / "completions").glob("batch-*.json"))) == 2
    calls["n"] = -100
    assert main([*argv, "--out", str(cut)]) == 0
    assert calls["n"] == -98  # only the two batches left were generated
    assert _texts(cut) == _texts(whole) and _rows(cut) == _rows(whole)  # batch b samples from seed + b


def test_config_errors_and_the_summary_by_hand() -> None:
    with pytest.raises(ThinklensError, match="samples"):
        EvalJobConfig(samples=2)
    with pytest.raises(ThinklensError, match="temperature"):
        EvalJobConfig(temperature=-1.0)
    with pytest.raises(ThinklensError, match="prompt format"):
        EvalJobConfig(prompt_format="zoo")
    rows = [{"i": 0, "correct": True, "n_tokens": 4, "n_reasoning_tokens": 2, "n_answer_tokens": 1, "closed": True,
             "stop_reason": "eos", "metadata": {"level": 2}},
            {"i": 0, "correct": False, "n_tokens": 8, "n_reasoning_tokens": 8, "n_answer_tokens": 0, "closed": False,
             "stop_reason": "max_new_tokens", "metadata": {"level": 2}},
            {"i": 1, "correct": False, "n_tokens": 6, "n_reasoning_tokens": 3, "n_answer_tokens": 2, "closed": True,
             "stop_reason": "eos", "metadata": {"level": 10}}]
    s = summarize_eval(rows, ["level"])
    assert s["overall"]["accuracy"] == pytest.approx(1 / 3) and s["overall"]["any_correct"] == 0.5
    assert list(s["by"]["level"]) == ["2", "10"]  # numeric order
    assert s["by"]["level"]["2"]["stop_reasons"] == {"eos": 1, "max_new_tokens": 1}
    assert s["by"]["level"]["2"]["mean_reasoning_tokens"] == 5.0


def test_group_fields_of_a_math_style_file(tmp_path) -> None:
    from thinklens.analyses.evaluation import group_fields
    from thinklens.data.problemsets import load_problems

    f = tmp_path / "math.jsonl"
    f.write_text("\n".join(json.dumps({"problem": f"q{i}", "answer": "\\frac{1}{2}", "level": i % 3, "subject": "Algebra",
                                       "unique_id": f"u{i}"}) for i in range(6)) + "\n")
    ps = load_problems(f)
    assert group_fields(ps) == ["level"]  # subject has one value here
    assert group_fields(ps, ["subject"]) == ["subject"]
    with pytest.raises(ThinklensError, match="group field"):
        group_fields(ps, ["levels"])
