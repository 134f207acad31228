"""CODI: distillation positions, batch invariance (the reference's masking bug), loss terms, ablations."""

import pytest
import torch

from thinklens.errors import ThinklensError
from thinklens.latent.codi import CODI, kd_positions, teacher_chain
from thinklens.latent.config import CODIConfig
from thinklens.latent.segments import Example, make_example


def test_kd_position_is_token_before_answer_number_in_both_sequences(model, tokens, examples):
    codi = CODI(model, tokens, n_latents=3)
    batch = codi.collate(examples[:4])
    tok = model.tokenizer
    for name, ids_key, pos_key in (("teacher", "teacher", "kd_teacher"), ("student", "suffix", "kd_student")):
        ids = batch[ids_key][0]
        for r, ex in enumerate(examples[:4]):
            p = int(batch[pos_key][r])
            assert tok.convert_ids_to_tokens(int(ids[r, p])) == "####", name
            assert int(ids[r, p + 1]) == ex.answer[-1]  # the next token is the answer number
            assert tok.decode([int(ids[r, p + 1])]) == ex.gold


def test_kd_position_found_by_search_when_answer_number_appears_earlier(model):
    tok = model.tokenizer
    # the answer (12) also appears in the question and the chain: only marker + number is the anchor
    ex = make_example(tok, "Tom has 12 apples . steps :", ["<< 12 + 3 = 15 >>", "<< 15 - 3 = 12 >>"], 12)
    row = list(ex.prompt) + teacher_chain(ex) + list(ex.answer) + [tok.eos_token_id]
    (p,) = kd_positions([ex], [row])
    assert p == len(row) - 3 and tok.decode([row[p]]) == "####"
    assert teacher_chain(ex) == list(ex.steps[0])  # the last step is dropped from the teacher


def test_include_last_step_keeps_the_whole_chain_in_the_teacher(model, tokens, examples):
    """The teacher row with include_last_step is the prompt, every step, the answer; the kd position still the marker
    (mutant killed: the flag ignored, so the last step stays dropped)."""
    ex = examples[0]
    full = CODI(model, tokens, n_latents=2, include_last_step=True).collate([ex])
    short = CODI(model, tokens, n_latents=2).collate([ex])
    want = list(ex.prompt) + [t for s in ex.steps for t in s] + list(ex.answer) + [tokens.eos]
    assert full["teacher"][0][0].tolist() == want
    assert full["teacher"][0].shape[1] == short["teacher"][0].shape[1] + len(ex.steps[-1])
    assert int(full["kd_teacher"][0]) == len(want) - len(ex.answer) - 1 + ex.marker_len - 1
    assert CODIConfig().include_last_step is False  # the reference's default


def test_kd_positions_with_multi_token_marker():
    ex = Example(prompt=(1, 2), steps=((5,), (6,)), answer=(30, 31, 44), marker_len=2, gold="7")
    assert kd_positions([ex], [[1, 2, 5, 30, 31, 44, 9, 30, 31, 44, 2]]) == [8]


def test_batch_1_and_batch_16_give_the_same_outputs(model, tokens, examples):
    codi = CODI(model, tokens, n_latents=4).eval()
    assert len({len(ex.prompt) for ex in examples}) > 1  # rows really are padded
    together = codi.student_outputs(examples)  # [16, suffix, vocab]
    for r in (0, 5, 15):
        alone = codi.student_outputs([examples[r]])
        assert torch.allclose(together[r, : alone.shape[1]], alone[0], atol=1e-5)
    # latents themselves too (inference path)
    a = codi.infer(examples, 4, max_new_tokens=3)
    b = codi.infer(examples[:1], 4, max_new_tokens=3)
    assert a[0]["latents"][2]["tokens"] == b[0]["latents"][2]["tokens"]


def test_loss_terms_and_teacher_gets_gradient(model, tokens, examples):
    codi = CODI(model, tokens, n_latents=2)
    out = codi(codi.collate(examples[:4]))
    assert set(out) == {"loss", "ce_student", "ce_teacher", "kd"}
    expect = out["ce_student"] + out["kd"] + out["ce_teacher"]
    assert torch.allclose(out["loss"].detach(), expect, atol=1e-4)
    out["loss"].backward()
    assert codi.prj[1].weight.grad is not None and model.hf.get_input_embeddings().weight.grad is not None


def test_example_losses_are_each_examples_own_and_average_to_the_batch_terms(model, tokens, examples):
    """Oracles: each example's three terms in a padded batch equal that example's terms alone, and the batch terms are
    their means, with the loss weighting kd by w_kd (mutants killed: a term averaged before it is returned, kd unweighted)."""
    codi = CODI(model, tokens, n_latents=2, w_kd=3.0, include_last_step=True).eval()
    with torch.no_grad():
        per = codi.example_losses(codi.collate(examples[:4]))
        out = codi(codi.collate(examples[:4]))
        for r in (0, 3):
            alone = codi.example_losses(codi.collate([examples[r]]))
            for k in ("ce_student", "ce_teacher", "kd"):
                assert per[k].shape == (4,) and torch.allclose(per[k][r], alone[k][0], atol=1e-5), k
    for k in ("ce_student", "ce_teacher", "kd"):
        assert torch.allclose(out[k], per[k].mean(), atol=1e-6)
    assert torch.allclose(out["loss"], (per["ce_student"] + 3.0 * per["kd"] + per["ce_teacher"]).mean(), atol=1e-5)


def test_a_saved_codi_is_rebuilt_with_the_losses_it_was_trained_with(model, tokens):
    from thinklens.latent.codi import build_for_inference

    saved = {"n_latents": 3, "projection": True, "prj_dim": 0, "prj_dropout": 0.0, "w_kd": 20.0, "include_last_step": True}
    codi = build_for_inference(model, tokens, saved)
    assert (codi.n_latents, codi.w_kd, codi.include_last_step) == (3, 20.0, True)
    old = build_for_inference(model, tokens, {k: saved[k] for k in ("n_latents", "projection", "prj_dim", "prj_dropout")})
    assert (old.w_kd, old.include_last_step) == (1.0, False)  # written before the two were saved: the defaults


def test_ablations_build(model, tokens, examples):
    no_prj = CODI(model, tokens, n_latents=2, use_projection=False)
    assert isinstance(no_prj.prj, torch.nn.Identity)
    no_kd = CODI(model, tokens, n_latents=2, w_kd=0.0)
    out = no_kd(no_kd.collate(examples[:2]))
    assert torch.allclose(out["loss"].detach(), out["ce_student"] + out["ce_teacher"], atol=1e-5)


def test_n_latents_below_one_is_a_clear_error():
    with pytest.raises(ThinklensError, match="n_latents.*fix"):
        CODIConfig(n_latents=0)


def test_projection_scale_matched_init(model, tokens):
    codi = CODI(model, tokens, n_latents=2, prj_match_scale=True)
    rms = model.hf.get_input_embeddings().weight.pow(2).mean().sqrt()
    assert torch.allclose(codi.prj[-1].weight, rms.expand_as(codi.prj[-1].weight))
    h = torch.randn(3, model.d_model) * 50
    assert torch.allclose(codi.latent_input(h).pow(2).mean().sqrt(), rms, rtol=0.05)
