"""Thought anchors (analyses/anchors/), against oracles, and the planted setting's mutants.

Oracles: sentence splits of hand-written texts; the forced answer after a prefix against ``model.generate`` of the
prefix and the exit string (greedy), and the forced-answer importance against the accuracy differences computed by
hand from those answers; forked-cache rollouts (greedy) against fresh generation from the prefix; the suppression
forward with an empty mask against the unmasked logits (exactly equal) and, with a mask, the positions before the
suppressed sentence's end unchanged (exactly); the sentence-averaged attention against a loop over tokens; the answer
KL against a hand-computed sum.

Mutants killed (each named with the test that kills it; each applied by hand to the source and seen to fail it):
- a sentence ended at any terminal punctuation, decimal points included, or at a single line break
  (``test_split_hand_examples``);
- forced-answer importance with its sign flipped (without minus with), or answers read without the exit string
  appended (``test_forced_answer_oracle``);
- forked rollouts whose first token is chosen from logits other than the prefix's (``test_fork_equals_fresh_generation``);
- suppression that also masks the queries before the sentence's end (``test_suppression_empty_mask_is_exact``);
- hooks removed outside a ``finally`` (left on after an exception; ``test_hooks_removed_after_exception``);
- sentence attention with the two sentence axes swapped (``test_sentence_attention_oracle``);
- scoring sentences by position or by length instead of by the measured importance (``by-position``, ``by-length``:
  ``test_planted_mutants_fail``), and a planted check that counts misses as hits (the same test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from thinklens.analyses.anchors import validation
from thinklens.analyses.anchors.anchor_findings import anchor_findings, anchor_vs_rest
from thinklens.analyses.anchors.attention import (
    SuppressAttention,
    _attention_modules,
    eager_attention,
    logits_of,
    receiver_heads,
    sentence_attention,
    suppression_matrix,
)
from thinklens.analyses.anchors.figures import figure_importance, figure_suppression
from thinklens.analyses.anchors.importance import _forked, answer_kl, forced_answers, forced_importance
from thinklens.analyses.anchors.sentences import sentences_of, split_sentences, word_overlap
from thinklens.data.answers import extract_answer
from thinklens.errors import ThinklensError


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    from thinklens.engine.model import HookedModel

    return HookedModel.load("tiny-overthink")


@pytest.fixture(scope="module")
def planted(model):
    """One planted unit as a trace in the model's format, and its exit string."""
    from thinklens.data.formats import format_for

    unit = validation.planted_unit(2, seed=0, planted=True)
    return unit, validation.unit_sentences(model, unit), format_for(model, "auto").lynx_exit


def _texts(text: str, **kw) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text, **kw)]


def test_split_hand_examples():
    """The paper's rules: punctuation before a space or line break, blank lines, pieces under 10 characters merged."""
    assert _texts("So x = 3.5 now. Wait!\nThen y = 2? Fine") == ["So x = 3.5 now.", "Wait!\nThen y = 2? Fine"]
    assert _texts("1. First do x. 2. Then y.") == ["1. First do x.", "2. Then y."]  # short "1." joins the next
    assert _texts('He said "stop." Then he left.') == ['He said "stop." Then he left.']  # "." before a quote: no end
    assert _texts("Para one here.\n\nPara two here.") == ["Para one here.", "Para two here."]
    assert _texts("A long first line\nand its second.\n\nNext paragraph") == ["A long first line\nand its second.", "Next paragraph"]
    assert _texts("Done. x") == ["Done. x"]  # a short piece at the end joins the one before
    assert _texts("  ") == []
    with pytest.raises(ThinklensError):
        split_sentences("x", min_chars=0)


def test_sentences_prefix_and_tokens(model):
    s = sentences_of("P:", " One two three. Three four five.")
    assert s.sentences == ["One two three.", "Three four five."]
    assert [s.prefix(i) for i in range(3)] == ["P:", "P: One two three.", "P: One two three. Three four five."]
    ids, owner = s.token_sentence(model.tokenizer)
    assert len(ids) == len(owner)
    text = model.tokenizer.decode([t for t, o in zip(ids, owner) if o == 1])
    assert text.strip() == "Three four five."
    with pytest.raises(ThinklensError):
        s.prefix(3)


def test_overlap_and_kl_by_hand():
    assert word_overlap("So Leo has 77 stones.", "so leo has 77 stones") == 1.0
    assert word_overlap("So Leo has 77", "So Leo has 70") == pytest.approx(3 / 5)
    p = np.array([2 + 1, 1 + 1]) / 5  # answers 7, 8 with one pseudo-count each
    q = np.array([1 + 1, 2 + 1]) / 5
    assert answer_kl(["7", "7", "8"], ["7", "8", "8"]) == pytest.approx(float((p * np.log(p / q)).sum()))
    assert answer_kl(["7"], ["7"]) == 0.0
    assert math.isnan(answer_kl([], ["7"]))


def test_forced_answer_oracle(model, planted):
    """Forced answers (greedy) against model.generate of prefix + exit string; importance by hand from them."""
    unit, sents, exit_string = planted
    by_hand = []
    for i in range(len(sents) + 1):
        text = model.generate([sents.prefix(i) + exit_string], max_new_tokens=10)[0].text
        by_hand.append(extract_answer(exit_string + text) or "<none>")
        assert forced_answers(model, sents.prefix(i), exit_string=exit_string, n=3, temperature=0, seed=0) == [by_hand[-1]] * 3
    imp = forced_importance(model, sents, unit.gold, exit_string=exit_string, n_forced=2, temperature=0)
    right = [float(a == str(unit.gold)) for a in by_hand]
    assert imp.accuracy_diff.tolist() == [right[i + 1] - right[i] for i in range(len(sents))]
    assert int(np.argmax(imp.accuracy_diff)) == unit.value_index  # the planted sentence: the answer appears after it
    assert by_hand[unit.value_index + 1] == str(unit.gold) and by_hand[unit.value_index] != str(unit.gold)


def test_fork_equals_fresh_generation(model, planted):
    """Greedy rollouts from the forked prefix cache equal fresh greedy generation from the prefix."""
    _, sents, _ = planted
    prefix = sents.prefix(2)
    ids = model.tokenize([prefix])["input_ids"][0].tolist()
    rows = _forked(model, ids, 3, max_new_tokens=12, temperature=0, seed=0)
    fresh = model.generate([prefix], max_new_tokens=12)[0]
    assert rows == [list(fresh.token_ids)] * 3


def test_suppression_empty_mask_is_exact(model, planted):
    _, sents, _ = planted
    ids, owner = sents.token_sentence(model.tokenizer)
    clean = logits_of(model, ids)
    assert torch.equal(logits_of(model, ids, SuppressAttention([], start=0)), clean)
    keys = [p for p, o in enumerate(owner) if o == 1]
    start = max(keys) + 1
    sup = logits_of(model, ids, SuppressAttention(keys, start=start))
    assert torch.equal(sup[:start], clean[:start])  # nothing before the sentence's end changes
    assert not torch.allclose(sup[start:], clean[start:])  # and after it something does
    m = suppression_matrix(model, ids, owner)
    n = max(owner) + 1
    assert np.isnan(np.asarray(m.matrix)[np.tril_indices(n)]).all()
    assert np.isfinite(np.asarray(m.matrix)[np.triu_indices(n, 1)]).all() and min(m.importance[:-1]) > 0


def test_hooks_removed_after_exception(model, planted):
    _, sents, _ = planted
    ids, owner = sents.token_sentence(model.tokenizer)
    clean = logits_of(model, ids)
    before = model.hf.config._attn_implementation
    mods = _attention_modules(model)
    with pytest.raises(RuntimeError), eager_attention(model), SuppressAttention([3, 4], start=5).install(model):
        assert all(len(m._forward_pre_hooks) == 1 for m in mods)
        raise RuntimeError("boom")
    assert all(len(m._forward_pre_hooks) == 0 for m in mods)
    assert model.hf.config._attn_implementation == before
    assert torch.equal(logits_of(model, ids), clean)


def test_sentence_attention_oracle():
    g = torch.Generator().manual_seed(0)
    pat = torch.rand(2, 7, 7, generator=g)  # [head, q, k]
    owner = [-1, 0, 0, 1, 1, 1, 2]
    got = sentence_attention(pat, owner)
    for h in range(2):
        for j in range(3):
            for i in range(3):
                qs = [p for p, o in enumerate(owner) if o == j]
                ks = [p for p, o in enumerate(owner) if o == i]
                want = sum(float(pat[h, q, k]) for q in qs for k in ks) / (len(qs) * len(ks))
                assert float(got[h, j, i]) == pytest.approx(want, rel=1e-6)


def test_receiver_heads_shapes(model, planted):
    _, sents, _ = planted
    ids, owner = sents.token_sentence(model.tokenizer)
    r = receiver_heads(model, ids, owner, proximity=1, top_k=3)
    assert len(r.heads) == 3 and len(r.importance) == len(sents)
    k = np.asarray(r.kurtosis)
    assert k.shape == (model.n_layers, model.config.num_attention_heads)
    assert all(k[a, b] >= np.sort(k.ravel())[-3] for a, b in r.heads)


def _rows(importance: list[list[float]], value_index: list[int]) -> list[dict]:
    sents = ["Okay, so far so good.", "So Leo has 77 stones.", "Let me think step by step here.", "Hmm, let me see.", "Let me verify."]
    return [{"value_index": v, "sentences": sents, "forced": imp, "resampling": imp} for imp, v in zip(importance, value_index)]


def test_planted_mutants_fail():
    """The measured importance passes the planted check; by-position and by-length scorers fail it."""
    vidx = [k % 4 for k in range(20)]
    rows = _rows([[1.0 if s == v else 0.0 for s in range(5)] for v in vidx], vidx)
    assert validation.planted_check(rows).verdict == "recovered"
    for name, scorer in validation.MUTANTS.items():
        assert validation.planted_check(rows, scorer).verdict == "failed", name


def test_null_check_on_effect_and_on_none():
    none = _rows([[0.0] * 5 for _ in range(20)], [0] * 20)
    assert validation.null_check(none).verdict == "no-effect"
    effect = _rows([[0.0, 0.5, 0.0, 0.0, 0.0] for _ in range(20)], [1] * 20)
    assert validation.null_check(effect).verdict == "failed"


def test_findings_pick_by_forced_report_other():
    rows = [{"scores": {"forced": [0.0, 1.0, 0.0], "resampling": [0.1, 0.5, 0.0], "suppression": [0.2, 0.9, float("nan")]}}
            for _ in range(12)]
    fs = anchor_findings(rows, model="m")
    assert [f.verdict for f in fs] == ["effect", "effect"]
    assert fs[0].value == pytest.approx(0.5) and fs[0].control_value == pytest.approx(0.05)
    assert anchor_vs_rest({"forced": [0.0, 0.0], "resampling": [1.0, 0.0]}, "resampling") is None  # a tie: no anchor


def test_figures():
    assert len(figure_importance(["a.", "b."], {"forced": [0.0, 1.0], "resampling": [0.1, 0.2]}).data) == 2
    assert figure_suppression(["a.", "b."], [[float("nan"), 0.3], [float("nan")] * 2]).data[0].type == "heatmap"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["planted", "null"])
def test_settings_quick(name):
    from thinklens.calibration.controls import SettingContext

    setting = next(s for s in validation.SETTINGS if s.name == name)
    check = setting.run(SettingContext(quick=True, seed=0, workdir=None))
    assert check.verdict == setting.expected, check.details


def test_job_smallest_run(tmp_path):
    """The job end to end at its smallest size: the run folder's records, figures and summary."""
    import json

    from thinklens.runs.jobs import run_job

    res = run_job("thought-anchors", model="tiny-overthink", n_traces=1, max_new_tokens=40, max_sentences=3, n_forced=2,
                  n_rollouts=2, rollout_tokens=8, out=tmp_path / "r", progress=False, threads=1)
    rows = json.loads((res.run_dir / "results" / "anchors.json").read_text())
    assert len(rows) == 1 and set(rows[0]["scores"]) == {"forced", "resampling", "suppression", "receivers"}
    assert len(rows[0]["forced"]["answers"]) == len(rows[0]["sentences"]) + 1
    assert res.value["n_traces"] == 1 and "thought-anchors" not in res.value["measures"]
    with pytest.raises(ThinklensError, match="measures"):
        run_job("thought-anchors", measures="forced,nope", out=tmp_path / "x", progress=False)
