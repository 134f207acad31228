"""Latent-SFT: masks and dual-track positions against the spec's example, layouts, superposition, inference stop."""

import torch

from thinklens.engine.interventions import HookFn
from thinklens.engine.sites import Site
from thinklens.latent import lsft_layout as layout
from thinklens.latent.latent_sft import LatentSFT, entropy, superpose

# The spec's example: [P0, P1, <t>, L1, t1, t2, L2, t3, t4, L3, </t>, A1]
P, L, T, A = layout.PROMPT, layout.LATENT, layout.TEXT, layout.ANSWER
KINDS = [P, P, P, L, T, T, L, T, T, L, A, A]
OWNER = [-1, -1, -1, 0, 0, 0, 1, 1, 1, 2, -1, -1]
NAMES = ["P0", "P1", "<t>", "L1", "t1", "t2", "L2", "t3", "t4", "L3", "</t>", "A1"]


def test_positions_match_the_spec_example():
    assert layout.decoder_positions(KINDS, OWNER) == [0, 1, 2, 3, 4, 5, 4, 5, 6, 5, 6, 7]


def test_decoder_mask_against_the_spec_rules():
    m = layout.decoder_mask(KINDS, OWNER)
    i = {n: k for k, n in enumerate(NAMES)}

    def sees(q):
        return {NAMES[k] for k in range(len(NAMES)) if m[i[q], k]}

    assert sees("P1") == {"P0", "P1"}
    assert sees("<t>") == {"P0", "P1", "<t>"}
    assert sees("L1") == {"P0", "P1", "<t>", "L1"}
    assert sees("L3") == {"P0", "P1", "<t>", "L1", "L2", "L3"}  # prompt, earlier latents, itself; no text
    assert sees("t1") == {"L1", "t1"}  # its own latent and itself only (not the prompt)
    assert sees("t2") == {"L1", "t1", "t2"}
    assert sees("t4") == {"L2", "t3", "t4"}
    assert sees("</t>") == {"P0", "P1", "<t>", "L1", "L2", "L3", "</t>"}  # prompt + all latents, no text
    assert sees("A1") == {"P0", "P1", "<t>", "L1", "L2", "L3", "</t>", "A1"}


def test_encoder_mask_hides_earlier_compress_tokens():
    ids, where = layout.encoder_layout([1, 2], [11, 12, 13, 14, 15], 2, think=4, end_think=5, compress=9)
    assert ids == [1, 2, 4, 11, 12, 9, 13, 14, 9, 15, 9, 5] and where == [5, 8, 10]
    m = layout.encoder_mask(ids, 9)
    assert m[5].tolist() == [True] * 6 + [False] * 6  # C1 sees everything before it and itself
    assert not m[8, 5] and m[8, 8] and m[8, 7]  # C2 does not see C1
    assert not m[11, 5] and not m[11, 8] and not m[11, 10] and m[11, 9]  # </think> sees no C
    assert not m.triu(1).any()  # still causal


def test_decoder_layout_puts_the_next_chunk_after_each_latent():
    cot = [11, 12, 13, 14, 15, 16]
    ids, kinds, owner = layout.decoder_layout([1], cot, 2, [40, 41, 2], think=4, end_think=5, latent=8)
    assert layout.chunks(cot, 2) == [[11, 12], [13, 14], [15, 16]]
    # S1 is compressed into L1 only; L1 is followed by S2, L2 by S3, L3 by </think>
    assert ids == [1, 4, 8, 13, 14, 8, 15, 16, 8, 5, 40, 41, 2]
    assert kinds.count(layout.LATENT) == 3 and owner[3:5] == [0, 0] and owner[6:8] == [1, 1]


def test_stack_masks_is_additive_and_pads():
    m = layout.stack_masks([torch.tril(torch.ones(2, 2, dtype=torch.bool)), torch.tril(torch.ones(3, 3, dtype=torch.bool))])
    assert m.shape == (2, 1, 3, 3) and m[0, 0, 0, 1] < -1e30 and m[0, 0, 1, 0] == 0 and m[0, 0, 2, 2] == 0


def test_superposition_is_topk_softmax_of_embeddings():
    emb = torch.randn(20, 4)
    scores = torch.randn(3, 20)
    z, idx, p = superpose(scores, emb, 5)
    top = scores.topk(5, -1)
    assert torch.equal(idx, top.indices)
    assert torch.allclose(p, torch.softmax(top.values, -1))
    assert torch.allclose(z, (p[..., None] * emb[idx]).sum(1), atol=1e-6)
    assert torch.allclose(entropy(torch.full((1, 4), 0.25)), torch.tensor([1.3863]), atol=1e-4)


def test_collate_labels_and_training_phases(model, tokens, examples):
    lsft = LatentSFT(model, tokens, c=2, top_k=4)
    lsft.set_phase("encoder")
    b = lsft.collate(examples[:2])
    row, labels = b["ids"][0].tolist(), b["labels"][0].tolist()
    for s in b["slots"][0]:
        assert row[s] == tokens.latent and labels[s - 1] == -100  # latents are never CE targets
    assert tokens.end_think in [x for x in labels if x != -100] and labels[b["slots"][0][-1]] == tokens.end_think
    for phase, enc, dec in (("encoder", True, False), ("decoder", False, True), ("joint", True, True), ("stage2", False, True)):
        lsft.set_phase(phase)
        out = lsft(lsft.collate(examples[:2]))
        out["loss"].backward()
        assert any(p.grad is not None for p in lsft.encoder.parameters()) == enc, phase
        assert any(p.grad is not None for p in lsft.hf.parameters()) == dec, phase
        lsft.zero_grad(set_to_none=True)
    assert "kl" in out and float(out["kl"]) >= 0


def test_inference_stops_when_argmax_is_end_think(model, tokens, examples):
    lsft = LatentSFT(model, tokens, c=2, top_k=4, encoder=torch.nn.Identity())
    free = lsft.infer(examples[:1], max_latent_steps=3)[0]
    assert len(free["latents"]) == 3 and {"entropy", "exp_entropy", "tokens"} <= set(free["latents"][0])

    def favour_end(act, ctx):  # the core's logits site: make </think> the argmax at once
        act = act.clone()
        act[..., tokens.end_think] += 100.0
        return act

    with model.intervene([HookFn(Site("logits"), favour_end)]):
        stopped = lsft.infer(examples[:1], max_latent_steps=3)[0]
    assert stopped["latents"] == []
