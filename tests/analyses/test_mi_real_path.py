"""mi-peaks on a model that looks like a real reasoning model (tiny-r1: Qwen2, byte-level BPE, a chat template
opening <think>, boxed answers) and a GSM8K-format file, through the generic path: the chat format, the data
set's solution as the golden text, is_correct grading, the boxed TTTS cue, words found on decoded text."""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.analyses.mi.run_format import read_index, read_trajectory
from thinklens.cli import main
from thinklens.data.answers import is_correct
from thinklens.data.formats import R1_INSTRUCTION, TTTS_CUE, TTTS_TOKENS


def test_mi_peaks_on_tiny_r1_with_its_chat_template_and_a_gsm8k_file(tiny_r1, gsm8k_file, tmp_path, no_zoo_branch):
    out = tmp_path / "mi"
    budget = "160" if tiny_r1 == "tiny-r1" else "32"  # the trained organism's answers take 60-115 tokens
    argv = ["run", "mi-peaks", "--model", tiny_r1, "--data", str(gsm8k_file), "--prompt-format", "chat",
            "--n-problems", "4", "--max-new-tokens", budget, "--k", "3", "--ci", "wilson", "--estimators", "reference,l2",
            "--thinking-words", "Wait", "--suppression", "--n-random", "1", "--recycling", "--ttts", "--ttts-budgets", "0,4",
            "--batch-size", "4", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    (entry,) = read_index(out)["models"]
    assert entry["prompt_format"] == "chat" and entry["thinking_span"] == "think" and entry["token_separator"] == ""
    lines = [json.loads(line) for line in gsm8k_file.read_text().splitlines()]
    for row in entry["index"]:
        rec = read_trajectory(out, entry["key"], row["i"])
        assert rec.prompt.startswith("<|im_start|>user\n") and rec.prompt.endswith("<|im_start|>assistant\n<think>\n")
        assert R1_INSTRUCTION in rec.prompt
        assert rec.solution == lines[rec.index]["answer"]  # h_gt: the data set's own solution text
        assert rec.answer == lines[rec.index]["answer"].rsplit("#### ", 1)[1]
        assert rec.correct == is_correct(rec.text, rec.answer)
    ttts = json.loads((out / "results" / "ttts.json").read_text())
    assert ttts["answer_cue"] == TTTS_CUE and ttts["answer_tokens"] == TTTS_TOKENS and ttts["prompt_format"] == "chat"
    assert ttts["words"] == ["Wait"] and {(r["method"], r["budget"]) for r in ttts["rows"]} == {
        ("plain", 0), ("plain", 4), ("ttts:Wait", 4)}
    sup = json.loads((out / "results" / "suppression.json").read_text())
    assert sup["words"] == ["Wait"] and sup["rows"][1]["n_ids"] >= 1
    assert json.loads((out / "results" / "recycling.json").read_text())["rows"][0]["n"] == 4
    words = json.loads((out / "results" / "enrichment.json").read_text())[entry["key"]]["words"]["top_k"]["words"]
    assert all(w["word"].isalpha() and w["word"] != "think" for w in words)
    if tiny_r1 == "tiny-r1":  # the trained organism reasons with thinking words and answers in a box
        readme = json.loads((Path(__file__).resolve().parents[2] / "results" / "tiny_r1_realpath.json").read_text())
        assert entry["accuracy"] >= readme["values"]["mi"]["models"]["tiny-r1"]["accuracy"] - 0.05  # the README's run


def test_paper_preset_is_the_reference_on_plain_prompts() -> None:
    from thinklens.analyses.jobs.mi_peaks import PRESETS

    paper = PRESETS["paper"]
    assert paper.prompt_format == "plain" and paper.max_new_tokens == 512 and paper.k == 20
    assert paper.sites == ("resid_post.-1",) and paper.estimators[0] == "reference" and paper.top_words == 10
    assert paper.rr_probability == 0.5 and paper.rr_layer is None  # about 0.72 of the depth
