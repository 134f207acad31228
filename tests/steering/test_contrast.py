"""Contrastive activation addition (steering/contrast.py, the steer-vector job) on a tiny random Llama whose word
tokenizer adds no BOS, as SmolLM2's does not.

Mutants these tests kill (each named where it dies):
- the vector read at position 0 (prefix dropped: the attention-sink trap) -> test_one_token_pair_never_reads_the_sink;
- the massive-state check removed or compared the wrong way -> test_a_massive_read_state_is_refused;
- the sign of the coefficient flipped in actadd -> test_orig_plus_c_v_equals_steered_at_every_position;
- steering applied to the prompt only (positions="last" or a list) -> the same test's generated-token part;
- the random control not norm-matched (or not seeded) -> test_random_control_is_norm_matched_and_seeded;
- the verdict ignoring the coefficient's sign, the random control or the fluency bound ->
  test_a_coefficient_is_an_effect_only_with_its_sign_beyond_random_and_fluent;
- a degenerate threshold of >= instead of >, or another n-gram size -> test_degenerate_definition_on_hand_written_text;
- the continuation's NLL read at the wrong offset under left padding -> test_continuation_nll_matches_a_plain_forward.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.engine.interventions import HookFn
from thinklens.steering import contrast as C
from thinklens.steering.jobs.steer_vector import JOB, SteerVectorConfig, read_texts, steer_site
from thinklens.steering.vectors import diff_of_means

SITE = Site("resid_post", 1)  # the last block of the tiny model: a state there depends on lower layers only


def _scale_position(p: int, factor: float) -> HookFn:
    """A planted massive activation: the states at logical position ``p`` multiplied by ``factor`` at SITE."""

    def fn(act, ctx):
        return torch.where((ctx.position_ids == p)[..., None], act * factor, act)

    return HookFn(SITE, fn)


def _last_state(model, ids: list[int]) -> torch.Tensor:
    return model.capture([ids], [SITE]).acts[SITE][0, -1]


def test_read_prefix_puts_a_context_before_a_text_on_a_no_bos_tokenizer(tiny_llama):
    tok = tiny_llama.tokenizer
    w5 = tok("w5")["input_ids"]
    assert len(w5) == 1 and C.read_prefix(tiny_llama) == [tok.eos_token_id]  # the word tokenizer drops the newline
    assert C.read_rows(tiny_llama, ["w5"]) == [[tok.eos_token_id, *w5]]
    assert C.read_rows(tiny_llama, ["w5"], prefix=None) == [w5]


def test_one_token_pair_never_reads_the_sink(tiny_llama):
    """Kills: the vector read at position 0. A planted sink (position 0 x100, as SmolLM2's first state is ~8x an
    ordinary one) makes the naive last-token difference huge; the contrast vector keeps an ordinary norm and equals
    the oracle read after the context."""
    eos, (w5,), (w9,) = tiny_llama.tokenizer.eos_token_id, *(tiny_llama.tokenizer(w)["input_ids"] for w in ("w5", "w9"))
    with tiny_llama.intervene([_scale_position(0, 100.0)]):
        naive = diff_of_means(tiny_llama, SITE, ["w5"], ["w9"])  # the state of a lone token: position 0
        sv = C.contrast_vector(tiny_llama, SITE, "w5", "w9")
        unit = C.token_norm(tiny_llama, ["w1 w2 w3 w4", "w6 w7 w8"], SITE)
        oracle = _last_state(tiny_llama, [eos, w5]) - _last_state(tiny_llama, [eos, w9])
        with pytest.raises(ThinklensError, match="position 0"):
            C.contrast_vector(tiny_llama, SITE, "w5", "w9", prefix=None)
    assert torch.allclose(sv.vector, oracle, atol=1e-5)
    assert sv.norm < 3 * unit and naive.norm > 20 * sv.norm, (sv.norm, naive.norm, unit)
    assert (sv.n_a, sv.n_b, sv.site) == (1, 1, "resid_post.1")


#: Sets whose states are mostly ordinary when position 1 is made massive: only "w5" is read there.
A_SETS = (["w5", "w6 w7 w8 w9 w10"], ["w11 w12 w13 w14 w15", "w16 w17 w18 w19 w20"])


def test_a_massive_read_state_is_refused(tiny_llama):
    """Kills: the massive-activation check removed. A state x100 where the word is read is a sink, not the word."""
    with tiny_llama.intervene([_scale_position(1, 100.0)]), pytest.raises(ThinklensError, match="massive activation"):
        C.contrast_vector(tiny_llama, SITE, A_SETS[0], A_SETS[1])
    C.contrast_vector(tiny_llama, SITE, A_SETS[0], A_SETS[1])  # without the plant: fine


def test_set_vector_is_the_difference_of_mean_last_states(tiny_llama):
    eos, tok = tiny_llama.tokenizer.eos_token_id, tiny_llama.tokenizer
    a, b = ["w1 w2 w3", "w4 w5", "w6"], ["w10 w11", "w12 w13 w14 w15"]
    sv = C.contrast_vector(tiny_llama, SITE, a, b)
    mean = lambda texts: torch.stack([_last_state(tiny_llama, [eos, *tok(t)["input_ids"]]) for t in texts]).mean(0)  # noqa: E731
    assert torch.allclose(sv.vector, mean(a) - mean(b), atol=1e-5) and (sv.n_a, sv.n_b) == (3, 2)


@pytest.mark.parametrize("coeff", [2.5, -1.5])
def test_orig_plus_c_v_equals_steered_at_every_position(tiny_llama, coeff):
    """Kills: the coefficient's sign flipped; steering of the prompt only. ``orig + c * unit * v / |v|`` at every real
    position of a forward, and at every generated token (the states that produced them)."""
    sv = C.contrast_vector(tiny_llama, SITE, "w5", "w9")
    added = coeff * 7.0 * sv.vector / sv.vector.norm()
    iv = C.actadd(SITE, sv.vector, coeff, unit_norm=7.0)
    prompts = ["w3 w4 w5 w6", "w9 w8"]
    orig = tiny_llama.capture(prompts, [SITE]).acts[SITE]
    steered = tiny_llama.capture(prompts, [SITE], interventions=[iv]).acts[SITE]
    mask = tiny_llama.tokenize(prompts)["attention_mask"].bool()
    assert torch.allclose((orig + added)[mask], steered[mask], atol=1e-5)
    tr = tiny_llama.generate(["w3 w4 w5"], max_new_tokens=5, capture=[SITE], interventions=[iv])[0]
    ids = tr.prompt_ids + tr.token_ids
    plain = tiny_llama.capture([ids], [SITE]).acts[SITE][0]  # [pos, d], unsteered, the same tokens
    plen = len(tr.prompt_ids)
    assert torch.allclose(tr.hidden[SITE], plain[plen - 1: plen - 1 + len(tr.token_ids)] + added, atol=1e-4)


def test_random_control_is_norm_matched_and_seeded(tiny_llama):
    """Kills: the random control not norm-matched, or drawn from the global RNG."""
    v = C.contrast_vector(tiny_llama, SITE, "w5", "w9").vector
    r0 = C.random_like(v, 0)
    torch.manual_seed(123)
    assert torch.equal(r0, C.random_like(v, 0)) and not torch.equal(r0, C.random_like(v, 1))
    assert abs(float(r0.norm()) - float(v.norm())) < 1e-4 * float(v.norm())
    res = C.sweep(tiny_llama, ["w1 w2", "w3 w4 w5"], C.contrast_vector(tiny_llama, SITE, "w5", "w9"), (-1.0, 0.0, 1.0),
                  unit_norm=3.0, seed=0, max_new_tokens=3, decoding={"do_sample": True, "temperature": 1.0, "top_p": 1.0})
    norms = {(r["arm"], r["coeff"]): r["added_norm"] for r in res.rows}
    assert set(norms) == {("unsteered", 0.0), ("contrast", -1.0), ("contrast", 1.0), ("random", -1.0), ("random", 1.0)}
    assert norms[("random", 1.0)] == pytest.approx(norms[("contrast", 1.0)]) == pytest.approx(3.0)
    assert [f.extra["coeff"] for f in res.findings] == [-1.0, 1.0]
    assert all(f.verdict == "too few samples" and f.statistic == "sentiment_shift" for f in res.findings)  # 2 prompts
    assert C.sweep(tiny_llama, ["w1 w2"], C.contrast_vector(tiny_llama, SITE, "w5", "w9"), (1.0,), unit_norm=3.0, seed=0,
                   max_new_tokens=2, decoding={}, arms=("random",)).findings == []


def _arm(compound, *, nll=1.0, degenerate=0.0) -> C.ArmScores:
    n = len(compound)
    return C.ArmScores([""] * n, np.asarray(compound, float), np.full(n, nll), np.arange(n) < round(degenerate * n))


def test_a_coefficient_is_an_effect_only_with_its_sign_beyond_random_and_fluent():
    """Kills: a verdict that ignores the sign of c, the random control, or the fluency bound."""
    rng = np.random.default_rng(0)
    base = _arm(rng.normal(0.1, 0.3, 40))
    up = _arm(base.compound + 0.4 + rng.normal(0, 0.1, 40))
    still = _arm(base.compound + rng.normal(0, 0.1, 40))
    bound = C.Fluency(max_ppl_ratio=2.0, max_degenerate=0.2)
    f = C.coefficient_finding(1.0, up, still, base, bound)
    assert f.verdict == "effect" and f.value == pytest.approx(0.4, abs=0.05) and f.ci[0] > 0 and f.n == 40
    assert f.control == "equal-norm random direction" and abs(f.control_value) < 0.05
    assert C.coefficient_finding(-1.0, up, still, base, bound).verdict == "no effect"  # moved against the sign of c
    higher = _arm(base.compound + 0.8 + rng.normal(0, 0.1, 40))
    # below the random direction (as c < 0 asks) but above the unsteered model: still not a shift with c's sign
    assert C.coefficient_finding(-1.0, up, higher, base, bound).verdict == "no effect"
    assert C.coefficient_finding(1.0, up, up, base, bound).verdict == "no effect"  # the random direction does as well
    broken = C.coefficient_finding(1.0, _arm(up.compound, nll=1.0 + np.log(2.5)), still, base, bound)
    assert broken.verdict == "no effect" and "fluency" in broken.extra["otherwise"] and broken.extra["ppl_ratio"] == pytest.approx(2.5)
    repeats = C.coefficient_finding(1.0, _arm(up.compound, degenerate=0.25), still, base, bound)
    assert repeats.verdict == "no effect" and "degenerate 0.25 > 0.2" in repeats.extra["otherwise"]
    assert "perplexity" not in repeats.extra["otherwise"]
    assert C.coefficient_finding(1.0, _arm(up.compound[:8]), _arm(still.compound[:8]), _arm(base.compound[:8]),
                                 bound).verdict == "too few samples"


def test_degenerate_definition_on_hand_written_text():
    """Kills: the threshold compared with >=, another n-gram size, or words that are not words."""
    assert C.is_degenerate("love love love love love love")  # 4 trigrams, 1 distinct: 0.75
    assert C.is_degenerate("I went to the store and I went to the store and I went to the store")  # 1 - 6/14
    assert C.is_degenerate("") and C.is_degenerate("  ...!!! 123 ?? ")  # no word at all
    assert not C.is_degenerate(" bought some bread, then walked home through the quiet park.")
    # 12 words, 10 trigrams, 7 distinct: a share of exactly 0.3 is not above the bound
    text = "a b c a b c a b x y z w"
    assert C.repeated_ngram_share(text) == pytest.approx(0.3) and not C.is_degenerate(text)
    assert C.repeated_ngram_share("a b c d a b c e", n=3) == pytest.approx(1 - 5 / 6)
    assert C.vader_compound(["I love this wonderful day", "I hate it", "w1 w2"]).tolist()[2] == 0.0


@torch.no_grad()
def test_continuation_nll_matches_a_plain_forward(tiny_llama):
    trs = tiny_llama.generate(["w3 w4 w5 w6 w7", "w9"], max_new_tokens=4, do_sample=True, seed=1)
    got = C.continuation_nll(tiny_llama, trs)
    for k, tr in enumerate(trs):
        ids = torch.tensor([tr.prompt_ids + tr.token_ids])
        logp = tiny_llama.hf(input_ids=ids).logits[0, :-1].log_softmax(-1)  # one row: no padding
        want = -logp[torch.arange(ids.shape[1] - 1), ids[0, 1:]][-len(tr.token_ids):].mean()
        assert got[k] == pytest.approx(float(want), abs=1e-4)


def test_config_errors_say_what_was_received_and_come_before_the_model_loads(tmp_path, tiny_llama):
    with pytest.raises(ThinklensError, match="pair"):
        SteerVectorConfig(pair=(" Love", ""))
    with pytest.raises(ThinklensError, match="pair"):
        SteerVectorConfig(pair=("Love",))
    with pytest.raises(ThinklensError, match="pair"):
        SteerVectorConfig(pair=("Love", " Love"))
    with pytest.raises(ThinklensError, match="prompts_b"):
        SteerVectorConfig(prompts_a="data/real/sentiment_sets.json:positive")
    with pytest.raises(ThinklensError, match="coeffs"):
        SteerVectorConfig(coeffs=(0.0,))
    with pytest.raises(ThinklensError, match="site"):
        SteerVectorConfig(site="resid_pst.3")
    with pytest.raises(ThinklensError, match="site"):
        SteerVectorConfig(site="logits")
    assert SteerVectorConfig(pair=("Love", "Hate")).pair == (" Love", " Hate")  # the CLI strips list items
    with pytest.raises(ThinklensError, match="layer"):
        steer_site(tiny_llama, "resid_post.7")
    assert steer_site(tiny_llama, "auto") == C.default_site(tiny_llama)
    from thinklens.runs.jobs import run_job

    # a missing file is refused by the config, before the (here unloadable) model is asked for
    with pytest.raises(ThinklensError, match=r"prompts file: received 'no/such/file.txt'"):
        run_job(JOB, model="no-such-model-anywhere", prompts="no/such/file.txt", runs=str(tmp_path), progress=False)
    with pytest.raises(ThinklensError, match="key of sentiment_sets.json"):
        read_texts("data/real/sentiment_sets.json:happy")
    assert len(read_texts("data/real/sentiment_sets.json:positive")) >= 30


def test_the_data_files_hold_enough_distinct_texts():
    prompts = read_texts("data/real/neutral_prompts.json:prompts")
    held_out = read_texts("data/real/neutral_prompts.json:held_out")
    assert len(prompts) >= 60 and len(set(prompts)) == len(prompts) and not set(prompts) & set(held_out)
    sets = {k: read_texts(f"data/real/sentiment_sets.json:{k}") for k in ("positive", "negative")}
    assert min(len(v) for v in sets.values()) >= 30
    # the sets carry sentiment by VADER's own reading, so a CAA vector from them is a sentiment contrast
    assert C.vader_compound(sets["positive"]).mean() > 0.4 > -0.4 > C.vader_compound(sets["negative"]).mean()


def test_the_job_writes_rows_findings_and_the_vector(tiny_llama, tmp_path):
    from thinklens.runs.jobs import run_job
    from thinklens.steering.vectors import SteeringVector

    (tmp_path / "p.txt").write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(12)))
    res = run_job(JOB, model=tiny_llama, prompts=str(tmp_path / "p.txt"), pair=("w5", "w9"), n_prompts=12, max_new_tokens=3,
                  coeffs=(-1.0, 0.0, 1.0), site="resid_post.1", out=str(tmp_path / "run"), progress=False)
    doc = json.loads((tmp_path / "run" / "results" / "steer_vector.json").read_text())
    assert doc["site"] == "resid_post.1" and doc["n_prompts"] == 12 and len(doc["rows"]) == 5
    assert {"compound", "compound_ci", "shift", "shift_ci", "perplexity", "ppl_ratio", "degenerate", "examples"} <= set(doc["rows"][1])
    assert [f["verdict"] for f in res.findings] == ["no effect", "no effect"]  # word tokens: VADER reads no sentiment
    assert set(res.findings[0]) >= {"claim", "statistic", "value", "ci", "n", "control", "control_value", "verdict"}
    assert SteeringVector.load(tmp_path / "run" / "vectors" / "contrast").site == "resid_post.1"
