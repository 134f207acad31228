"""The token-level SFT baselines of the latent table: the loss is the plain CE of what follows the prompt, the
CoT loss is CODI's teacher loss, and greedy inference equals the core's traced generation."""

import torch

from thinklens.latent.codi import CODI
from thinklens.latent.sft import SFT, infer_examples


def _plain_ce(model, rows: list[list[int]], first: list[int]) -> torch.Tensor:
    """Per-row mean next-token CE over positions >= first (one row at a time, no padding)."""
    out = []
    for row, f in zip(rows, first):
        ids = torch.tensor([row])
        logits = model.hf(input_ids=ids).logits[0, :-1].float()
        ce = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")[f - 1:]
        out.append(ce.mean())
    return torch.stack(out)


def test_cot_and_no_cot_losses_are_the_plain_ce_of_their_targets(model, tokens, examples):
    exs = examples[:4]
    for cot in (True, False):
        sft = SFT(model, tokens, cot=cot)
        got = sft(sft.collate(exs))["loss"]
        rows = [list(ex.prompt) + (ex.cot if cot else []) + list(ex.answer) + [tokens.eos] for ex in exs]
        want = _plain_ce(model, rows, [len(ex.prompt) for ex in exs]).mean()
        assert torch.allclose(got, want, atol=1e-5), cot


def test_cot_sft_loss_with_the_last_step_kept_is_codis_teacher_term(model, tokens, examples):
    # CODI's teacher drops the chain's last step; on one-step-shorter examples the two targets coincide
    exs = [type(ex)(ex.prompt, ex.steps[:-1], ex.answer, ex.marker_len, ex.gold) for ex in examples[:4]]
    codi = CODI(model, tokens, n_latents=1)
    teacher = codi(codi.collate([type(ex)(ex.prompt, ex.steps + ((),), ex.answer, ex.marker_len, ex.gold)
                                 for ex in exs]))["ce_teacher"]
    sft = SFT(model, tokens, cot=True)
    assert torch.allclose(sft(sft.collate(exs))["loss"], teacher, atol=1e-5)


def test_greedy_inference_is_the_cores_generation(model, tokens, examples):
    sft = SFT(model, tokens, cot=True)
    got = infer_examples(sft, examples[:6], {"cot": True})
    budget = max(len(ex.cot) for ex in examples[:6]) + max(8, max(len(ex.answer) for ex in examples[:6]) + 4)
    for ex, r in zip(examples[:6], got):
        alone = model.hf.generate(torch.tensor([ex.prompt]), max_new_tokens=budget, do_sample=False,
                                  eos_token_id=tokens.eos, pad_token_id=tokens.pad)[0, len(ex.prompt):].tolist()
        if tokens.eos in alone:
            alone = alone[: alone.index(tokens.eos)]
        assert r["ids"] == alone and r["latents"] == []
