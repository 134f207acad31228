"""lynx and probe on tiny-r1 (a model that looks like a real reasoning model) with ``--prompt-format chat`` and
data files in GSM8K's and MATH's formats, through the generic path: every zoo-only helper raises if called.

While tiny-r1 is not trained, the shared ``tiny_r1`` fixture is a barely trained twin of its shape (same
tokenizer pipeline and chat template, a plain Hugging Face folder): the jobs then run the generic path up to
the point where such a model has nothing to learn from, and must stop there with their clear errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from thinklens.cli import main
from thinklens.data.formats import R1_INSTRUCTION
from thinklens.errors import ThinklensError
from thinklens.generation.trace import Trace
from thinklens.probes.datasets import rollout_events, token_separator
from thinklens.probes.lynx import LynxConfig, lynx_sites
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job
from thinklens.tasks import TaskConfig
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.zoo.registry import zoo_path

R1_EXIT = "</think>\n\nFinal Answer: \\boxed{"
#: The probes' zoo-only helpers (the synthetic task's own problem streams, the running-value dataset), forbidden
#: with the core's (tests/conftest.py: the zoo's renderings, styles and token budgets).
PROBES_ZOO_ONLY = ("thinklens.probes.value_dataset.value_dataset",)  # the task's own streams: tests/conftest.py
#: The clear errors of a job whose model has nothing to learn from (no cue words, no or only right answers).
NOTHING_TO_LEARN = "bad cue events|probe training data|bad deltas|calibration class size|correctness labels"


def tiny_r1_trained() -> bool:
    """Whether the zoo's tiny-r1 is trained (else the ``tiny_r1`` fixture is its barely trained twin)."""
    return zoo_path("tiny-r1") is not None


@pytest.fixture(scope="module")
def r1(tiny_r1):
    from thinklens import HookedModel

    return HookedModel.load(tiny_r1, dtype=torch.float32)


@pytest.fixture
def no_zoo_branches(no_zoo_branch, monkeypatch):
    """Every zoo-only helper raises, so a job that takes a zoo branch fails the test."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a zoo-only branch of the probes was taken for a model prompted in its chat format")

    for target in PROBES_ZOO_ONLY:
        monkeypatch.setattr(target, forbidden)


def _math(path, problems) -> str:
    """A MATH-500-format JSONL: ``problem``, ``solution`` ending in a box, ``answer``, ``level``, ``unique_id``."""
    path.write_text("".join(json.dumps({"problem": p.question, "solution": f"{p.cot} so \\boxed{{{p.answer}}}",
                                        "answer": str(p.answer), "level": f"Level {p.n_steps}",
                                        "unique_id": f"test/arith/{i}.json"}) + "\n" for i, p in enumerate(problems)))
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory, gsm8k_writer):
    """Disjoint held-out problems: a GSM8K file to train on, a MATH-format file to calibrate on, a GSM8K file to
    test on, and MATH-format files on which tiny-r1 is right about half of the time (half its usual problems,
    half with numbers up to 9999, which it never saw)."""
    root = tmp_path_factory.mktemp("data")
    base = HELD_OUT["eval"]
    hard = TaskConfig(max_value=9999, max_operand=900, max_factor=9)

    def mixed(seed: int) -> list:
        return problems_by_steps(6, 2, 4, seed=seed) + problems_by_steps(6, 2, 4, seed=seed, config=hard)

    return {
        "train": str(gsm8k_writer(root / "train.jsonl", 18, seed=base + 1)),
        "calibration": _math(root / "calibration.jsonl", problems_by_steps(12, 2, 4, seed=base + 2)),
        "test": str(gsm8k_writer(root / "test.jsonl", 15, seed=base + 3)),
        "mixed": _math(root / "mixed.jsonl", mixed(base + 4)),
        "mixed_test": _math(root / "mixed_test.jsonl", mixed(base + 5)),
    }


def test_cue_events_on_bpe_tokens(r1):
    tok = r1.tokenizer
    text = "Okay, 7 + 5 = 12. Wait, 7 + 5 = 12. Hmm, then awaiting 12 * 3 = 36.\n</think>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    pieces = [tok.decode([i]) for i in ids]
    assert " Wait" in pieces or "Wait" in "".join(pieces)  # BPE pieces carry their own spaces
    assert token_separator(tok, ids) == ""
    # "W" + "ait": the same word split over two tokens is still found, ending at its last piece
    split_ids = ids[:pieces.index(",") + 1] + tok(" W", add_special_tokens=False)["input_ids"] + \
        tok("ait", add_special_tokens=False)["input_ids"] + tok(", 3.", add_special_tokens=False)["input_ids"]
    for token_ids in (ids, split_ids):
        trace = Trace(prompt="", prompt_ids=[], token_ids=token_ids, tokens=[tok.decode([i]) for i in token_ids],
                      text=tok.decode(token_ids), stop_reason="eos")
        (events,) = rollout_events([trace], tok, LynxConfig(cue_words=("hmm", "wait", "alternatively")), "test")
        decoded = ["".join(trace.tokens[e.start_index:e.token_index + 1]).strip().lower() for e in events]
        assert all(e.cue in ("wait", "hmm") for e in events) and all(d.endswith(e.cue) for d, e in zip(decoded, events))
        assert [e.cue for e in events] == (["wait", "hmm"] if token_ids is ids else ["wait"])  # not "awaiting"


def test_lynx_settings_of_a_chat_model_are_the_references(r1, no_zoo_branches):
    from thinklens.data.formats import format_for
    from thinklens.probes.jobs.lynx import LynxJobConfig, resolve_settings

    s = resolve_settings(LynxJobConfig(model=r1.name, prompt_format="chat"), format_for(r1, "chat"),
                         prompts=["<|im_start|>user\nTom has 7 apples.<|im_end|>\n"], tokenizer=r1.tokenizer,
                         max_context=r1.max_context)
    assert (s.exit_string, s.cue_words, s.max_answer_tokens) == (R1_EXIT, ("hmm", "wait", "alternatively"), 64)
    assert s.max_new_tokens < r1.max_context  # prompt, rollout, exit string and forced answer fit in the context


def test_lynx_runs_the_generic_path_on_a_chat_model(r1, files, tmp_path, no_zoo_branches):
    # tiny-r1 writes "Hmm," before a step and "Wait," after a slip, where a forced exit is almost always wrong;
    # "Therefore" follows its last step, where it is right: both labels occur
    fields = dict(model=r1, prompt_format="chat", cue_words=("hmm", "wait", "therefore"), data=files["train"],
                  calibration_data=files["calibration"],
                  test_data=files["test"], n_train=36, n_calibration=36, n_test=30, max_new_tokens=150,
                  hidden_layer_sizes=(16,), deltas=(0.2, 0.3), skip_vacuous=True, batch_size=12, runs=tmp_path,
                  run_id="r1", progress=False)
    if not tiny_r1_trained():  # the twin writes cue words but (almost) never answers right
        with pytest.raises(ThinklensError, match=NOTHING_TO_LEARN):
            run_job("lynx", **fields | dict(n_train=8, n_calibration=8, n_test=8, max_new_tokens=24))
        return
    result = run_job("lynx", **fields)
    s = result.summary
    assert s["prompt_format"] == "chat" and s["exit_string"] == R1_EXIT  # the chat format, not the zoo's ####
    assert s["cue_words"] == ["hmm", "wait", "therefore"] and s["max_answer_tokens"] == 64
    assert s["sites"] == [str(x) for x in lynx_sites(r1.n_layers)]
    assert [s["splits"][k]["source"] for k in ("train", "calibration", "test")] == [
        f"{files['train']}#train", f"{files['calibration']}#calibration", f"{files['test']}#test"]
    assert s["splits"]["test"]["rollouts"] == 30 and s["splits"]["train"]["cue_events"] > 0
    assert 0 < s["splits"]["train"]["label_base_rate"] < 1  # some forced exits answer right, some wrong
    # sampled at T=0.6, graded on the boxed answers: within 5 points of the README's run (results/tiny_r1_realpath.json)
    readme = json.loads((Path(__file__).resolve().parents[2] / "results" / "tiny_r1_realpath.json").read_text())
    assert s["splits"]["test"]["full_accuracy"] >= readme["values"]["lynx"]["splits"]["test"]["full_accuracy"] - 0.05
    run = RunFolder.open(tmp_path / "lynx" / "r1")
    labels = json.loads(next((run.path / "cache").glob("labels.test_cues.*.json")).read_text())
    assert all(t.startswith(R1_EXIT) for t in labels["text"])  # every forced exit: the boxed one
    assert set(run.figures()) == {"pareto", "validity", "exit_histogram", "base_rate"}


def test_lynx_refuses_overlapping_sources(r1, files, tmp_path):
    copy = tmp_path / "copy.jsonl"  # another file holding the training problems
    copy.write_text(Path(files["train"]).read_text())
    with pytest.raises(ThinklensError, match="questions in both train and test"):
        run_job("lynx", model=r1, prompt_format="chat", data=files["train"], test_data=str(copy), n_train=12,
                n_calibration=12, n_test=12, skip_vacuous=True, runs=tmp_path, run_id="overlap", progress=False)
    with pytest.raises(ThinklensError, match="at most 36 problems"):  # splits cut from one file must fit in it
        run_job("lynx", model=r1, prompt_format="chat", data=files["train"], n_train=20, n_calibration=20, n_test=20,
                skip_vacuous=True, runs=tmp_path, run_id="small", progress=False)


def test_probe_correct_target_from_gold_answers(r1, files, tmp_path, capsys, no_zoo_branches):
    argv = ["run", "probe", "--model", r1.name, "--prompt-format", "chat", "--data", files["mixed"], "--target",
            "correct", "--n-problems", "36", "--folds", "3", "--n-bootstrap", "20", "--max-new-tokens", "250",
            "--sites", "embed,resid_post.*", "--test-data", f"{files['mixed_test']},{files['test']}", "--n-test", "20",
            "--runs", str(tmp_path), "--run-id", "r1", "--no-progress"]
    if not tiny_r1_trained():  # the twin is (almost) never right: too few of one outcome
        assert main(argv) == 2 and "bad correctness labels" in capsys.readouterr().err
        return
    assert main(argv) == 0
    doc = RunFolder.open(tmp_path / "probe" / "r1").read_result("sweep")
    assert doc["prompt_format"] == "chat" and doc["data"] == f"{files['mixed']}#probe" and doc["n_problems"] == 36
    assert 0 < doc["model_accuracy"] < 1 and doc["steps_only_auroc"] is None  # no step counts in a data file
    assert doc["sweeps"]["auroc"]["sites"] == ["embed"] + [f"resid_post.{i}" for i in range(r1.n_layers)]
    intention = RunFolder.open(tmp_path / "probe" / "r1").read_result("intention")
    assert list(intention["styles"]) == ["chat"]  # the job's own format: no zoo styles for a chat model
    assert intention["styles"]["chat"]["accuracy"] == pytest.approx(doc["model_accuracy"])
    # the probes fitted on one data set, scored on two others
    transfer = doc["transfer"]
    assert [t["data"] for t in transfer] == [f"{files['mixed_test']}#test", f"{files['test']}#test"]
    assert all(t["n_problems"] == 20 and set(t["accuracy"]) == set(doc["sweeps"]["auroc"]["sites"]) for t in transfer)
    assert all(a is None or 0 <= a <= 1 for t in transfer for a in t["auroc"].values())


def test_probe_refuses_test_data_it_cannot_use(r1, files, tmp_path):
    with pytest.raises(ThinklensError, match="test_data.*target='correct'"):
        run_job("probe", model=r1, prompt_format="chat", data=files["train"], test_data=(files["test"],),
                runs=tmp_path, run_id="t", progress=False)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(Path(files["train"]).read_text())
    with pytest.raises(ThinklensError, match="questions in both data and"):
        run_job("probe", model=r1, prompt_format="chat", data=files["train"], target="correct", test_data=(str(copy),),
                runs=tmp_path, run_id="o", progress=False)


def test_probe_refuses_ground_truth_targets_without_ground_truth(r1, files, tmp_path):
    with pytest.raises(ThinklensError, match="target intermediate.*no value at every step.*target='correct'"):
        run_job("probe", model=r1, prompt_format="chat", data=files["train"], runs=tmp_path, run_id="gt",
                progress=False)
    with pytest.raises(ThinklensError, match="target intermediate: received 'prompt format chat'.*target='correct'"):
        run_job("probe", model=r1, prompt_format="chat", data="synthetic:2-3:10", runs=tmp_path, run_id="fmt",
                progress=False)


def test_auto_format_of_a_chat_model_is_chat_with_the_r1_instruction(r1, files):
    from thinklens.data.formats import format_for
    from thinklens.data.problemsets import load_problems

    fmt = format_for(r1, "auto")
    prompt = fmt.render(load_problems(files["test"])[0].question, r1.tokenizer)
    assert fmt.name == "chat" and fmt.lynx_exit == R1_EXIT
    assert prompt.startswith("<|im_start|>user\n") and prompt.endswith(f"\n{R1_INSTRUCTION}<|im_end|>\n<|im_start|>assistant\n<think>\n")
    assert fmt.opens_span(prompt)
