"""SAE fidelity (CE loss recovered, KL) scored on generated tokens only, against a hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from thinklens.steering.sae_fidelity import generated_targets, sae_fidelity


def _num(x):
    return math.nan if x is None else x  # undefined scores are None in the job's JSON


def _rows():
    g = torch.Generator().manual_seed(3)
    out = []
    for n_prompt, n_gen in ((3, 4), (6, 2), (2, 7), (5, 1)):  # different lengths: the batch is padded
        ids = torch.randint(4, 40, (n_prompt + n_gen,), generator=g).tolist()
        out.append((ids[:n_prompt], ids[n_prompt:]))
    return out


def _layer_out(replace):
    def hook(module, inputs, output):
        if isinstance(output, tuple):
            return (replace(output[0]),) + tuple(output[1:])
        return replace(output)

    return hook


@torch.no_grad()
def _by_hand(model, sae, rows, *, score_prompt: bool = False, keep: tuple[int, ...] = (), splice_first: bool = False):
    """One unpadded row at a time through the raw HF model, the SAE spliced in at layer 0's output by a torch
    hook (positions holding a token of ``keep``, and the first, keep their own state); CE and KL summed over the positions predicting
    generated tokens (or every position, for a mutant)."""
    layer = model.hf.model.layers[0]
    sums = {"clean": 0.0, "sae": 0.0, "zero": 0.0, "kl_sae": 0.0, "kl_zero": 0.0}
    n = 0
    for prompt, gen in rows:
        ids = torch.tensor([prompt + gen])
        first = 0 if score_prompt else len(prompt) - 1
        pos = torch.arange(first, ids.shape[1] - 1)
        tgt = ids[0, pos + 1]
        logps = {}
        own = torch.isin(ids, torch.tensor(keep, dtype=torch.long))[..., None]  # [1, pos, 1]
        if not splice_first:
            own[0, 0] = True  # the first position (the attention sink) keeps its own state

        def splice(x, own=own):
            return torch.where(own, x, sae(x))

        for name, fn in (("clean", None), ("sae", splice), ("zero", torch.zeros_like)):
            handle = layer.register_forward_hook(_layer_out(fn)) if fn is not None else None
            try:
                logits = model.hf(input_ids=ids).logits[0].float()
            finally:
                if handle is not None:
                    handle.remove()
            logps[name] = torch.log_softmax(logits[pos], -1)
            sums[name] += float(-logps[name][torch.arange(len(pos)), tgt].sum())
        p = logps["clean"].exp()
        sums["kl_sae"] += float((p * (logps["clean"] - logps["sae"])).sum())
        sums["kl_zero"] += float((p * (logps["clean"] - logps["zero"])).sum())
        n += len(pos)
    m = {k: v / n for k, v in sums.items()}
    return {"ce_loss_without_sae": m["clean"], "ce_loss_with_sae": m["sae"], "ce_loss_with_ablation": m["zero"],
            "ce_loss_recovered": (m["zero"] - m["sae"]) / (m["zero"] - m["clean"]) if m["zero"] > m["clean"] else math.nan,
            "kl_div_score": (m["kl_zero"] - m["kl_sae"]) / m["kl_zero"], "fidelity_tokens": n}


def test_fidelity_matches_a_hand_computation_on_generated_tokens(tiny_llama, random_sae):
    """Oracle: CE with and without the SAE spliced in (and zero-ablated), one unpadded row at a time, over the positions
    that predict generated tokens. Kills the mutants: scoring padding positions (the batch is left-padded to the longest
    row, so any pad position scored changes the means), scoring prompt positions (`score_prompt`), an off-by-one in the
    target positions, splicing the SAE without its error term dropped (x instead of decode(encode(x))), and splicing
    it at each row's first position (the attention sink, never trained on; SmolLM2's rows start with a word there)."""
    rows = _rows()
    got = sae_fidelity(tiny_llama, random_sae, rows, site="resid_post.0", batch_size=3)
    want = _by_hand(tiny_llama, random_sae, rows)
    assert got["fidelity_tokens"] == want["fidelity_tokens"] == sum(len(g) for _, g in rows)
    for key, value in want.items():  # (an untrained model may do better zero-ablated: recovery is then undefined, nan)
        assert _num(got[key]) == pytest.approx(value, rel=1e-4, abs=1e-5, nan_ok=True), key
    with_prompt = _by_hand(tiny_llama, random_sae, rows, score_prompt=True)
    assert not math.isclose(with_prompt["ce_loss_with_sae"], got["ce_loss_with_sae"], rel_tol=1e-3)
    assert got["ce_loss_with_sae"] != pytest.approx(got["ce_loss_without_sae"])  # the splice really happened
    # rows that start with a word (no BOS): spliced at the first position too (the attention sink) is another number
    sink_spliced = _by_hand(tiny_llama, random_sae, rows, splice_first=True)
    assert not math.isclose(sink_spliced["ce_loss_with_sae"], got["ce_loss_with_sae"], rel_tol=2e-4)  # twice the oracle tolerance


def test_fidelity_does_not_depend_on_batching(tiny_llama, random_sae):
    """Mutant killed: positions or targets computed in the padded frame of one row but applied to another (batch sizes
    1 and 4 pad differently, so any padding leak changes the result)."""
    rows = _rows()
    one = sae_fidelity(tiny_llama, random_sae, rows, site="resid_post.0", batch_size=1)
    four = sae_fidelity(tiny_llama, random_sae, rows, site="resid_post.0", batch_size=4)
    for key in ("ce_loss_with_sae", "ce_loss_with_ablation", "ce_loss_recovered", "kl_div_score"):
        assert _num(one[key]) == pytest.approx(_num(four[key]), rel=1e-4, abs=1e-6, nan_ok=True), key


def test_generated_targets_mask():
    """The mask marks exactly len(generated) positions per row, ending one before the row's last token."""
    m = generated_targets([[1, 2, 3], [4]], [[5], [6, 7, 8]], width=5)
    assert m.tolist() == [[False, False, False, True, False], [False, True, True, True, False]]


def test_special_tokens_keep_their_state_when_the_sae_is_spliced(tiny_llama, random_sae):
    """Regression (SmolLM2-135M chat rows: the SAE spliced in at <|im_start|>, the attention sink at position 0 that
    it never trained on, gave CE loss recovered -0.41 for an SAE explaining 0.89 of the variance): pad, bos and eos
    positions keep their own activation, as in sae-lens's get_recons_loss; zero ablation still zeroes them. Oracle:
    the hand computation splicing everywhere but the eos token (id 1, this tokenizer's only special token in the rows)
    that opens each prompt and sits inside one; the mutant splicing everywhere differs."""
    from thinklens.steering.corpora import special_ids

    eos = tiny_llama.tokenizer.eos_token_id
    assert eos in special_ids(tiny_llama.tokenizer)
    rows = [([eos] + p[:2] + [eos] + p[2:], g) for p, g in _rows()]
    got = sae_fidelity(tiny_llama, random_sae, rows, site="resid_post.0", batch_size=3)
    want = _by_hand(tiny_llama, random_sae, rows, keep=tuple(special_ids(tiny_llama.tokenizer)))
    for key in ("ce_loss_without_sae", "ce_loss_with_sae", "ce_loss_with_ablation", "kl_div_score"):
        assert _num(got[key]) == pytest.approx(want[key], rel=1e-4, abs=1e-5, nan_ok=True), key
    everywhere = _by_hand(tiny_llama, random_sae, rows, splice_first=True)
    assert not math.isclose(everywhere["ce_loss_with_sae"], got["ce_loss_with_sae"], rel_tol=1e-3)
    assert got["ce_loss_with_ablation"] == pytest.approx(everywhere["ce_loss_with_ablation"], rel=1e-5)
