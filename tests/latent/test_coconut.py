"""Coconut and the KV-cached session: a hand-written full-recompute forward is the oracle."""

import torch

from thinklens.latent.coconut import Coconut, coconut_plan
from thinklens.latent.segments import init_special_embeddings
from thinklens.latent.session import LatentSession, last_hidden


def naive_coconut_logits(model, prompt_ids, n_latents, suffix_ids):
    """Oracle: rebuild the whole input embedding sequence and re-run it from scratch per latent."""
    emb = model.embed(torch.tensor([prompt_ids]))  # [1, p, d]
    for _ in range(n_latents):
        h = model.hf(inputs_embeds=emb, output_hidden_states=True).hidden_states[-1][:, -1:]
        emb = torch.cat([emb, h], 1)
    emb = torch.cat([emb, model.embed(torch.tensor([suffix_ids]))], 1)
    return model.hf(inputs_embeds=emb).logits[0, -len(suffix_ids):]


def test_cached_latent_loop_equals_full_recompute(model, tokens, examples):
    coco = Coconut(model, tokens, c=2, max_stage=3).eval()
    coco.stage = 2
    ex = examples[0]
    batch = coco.collate([ex])
    with torch.no_grad(), LatentSession(model, latent_id=tokens.latent) as s:
        out, states = coco.run(s, batch["prompt"], batch["n_latents"], batch["suffix"])
    suffix = batch["suffix"][0][0].tolist()
    with torch.no_grad():
        oracle = naive_coconut_logits(model, list(ex.prompt) + [tokens.bot], 4, suffix)
    assert torch.allclose(out.logits[0], oracle, atol=1e-4)


def test_curriculum_plan_and_collate(model, tokens, examples):
    assert [coconut_plan(3, s, 2, 3) for s in (1, 2, 3, 4)] == [(1, 2), (2, 4), (3, 6), (3, 6)]
    coco = Coconut(model, tokens, c=2, max_stage=3)
    ex = examples[0]
    coco.stage = 1
    b = coco.collate([ex])
    suffix = b["suffix"][0][0].tolist()
    assert b["n_latents"] == 2 and suffix == [tokens.eot, *ex.steps[1], *ex.steps[2], *ex.answer, tokens.eos]
    assert b["labels"][0, 0] == ex.steps[1][0]  # <eot> predicts the first remaining step; loss only on the rest
    coco.stage = 4
    assert coco.collate([ex])["suffix"][0][0].tolist() == [tokens.eot, *ex.answer, tokens.eos]


def test_session_without_latents_matches_core_generate(model, problems):
    from thinklens.tasks import render_prompt

    prompts = [render_prompt(p, "cot") for p in problems[:3]]
    want = [t.token_ids for t in model.generate(prompts, max_new_tokens=6)]
    enc = model.tokenize(prompts)
    with LatentSession(model, latent_id=8) as s:
        first = s.run_tokens(enc["input_ids"][:, :-1], enc["attention_mask"][:, :-1])
        assert last_hidden(first).shape == (3, model.d_model)
        got = s.greedy(enc["input_ids"][:, -1:], stop_id=-1, max_new_tokens=6)
    assert got == want


def test_special_tokens_initialised_from_open_brackets(model, tokens):
    init_special_embeddings(model, tokens)
    emb = model.hf.get_input_embeddings().weight
    src = model.tokenizer("<<", add_special_tokens=False)["input_ids"][0]
    assert torch.equal(emb[tokens.bot], emb[src]) and torch.equal(emb[tokens.latent], emb[src])
