"""CODI's distillation term against an independent computation, and the teacher's detach: the tests that kill the
mutants "no teacher detach", "distillation on the last layer only", "no /std" and "student state at the wrong
position" (bench/mutants.py lists them and checks that each fails here)."""

import torch

from thinklens.latent.codi import CODI


def _spy(monkeypatch, codi, model):
    """Record the student's output (``codi.run``) and the teacher's (the model's forward with hidden states)."""
    seen = {}
    real_run, real_forward = codi.run, model.forward

    def run(*a, **k):
        out = real_run(*a, **k)
        seen["student"] = out[0]
        return out

    def forward(*a, **k):
        out = real_forward(*a, **k)
        if k.get("output_hidden_states"):
            seen["teacher"] = out
        return out

    monkeypatch.setattr(codi, "run", run)
    monkeypatch.setattr(model, "forward", forward)
    return seen


def test_kd_is_the_mean_over_every_layer_of_smooth_l1_over_the_teachers_std(model, tokens, examples, monkeypatch):
    with torch.no_grad():  # blocks that write far more than unit scale: dividing by the states' std matters
        for name, w in model.hf.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                w.mul_(30)
    codi = CODI(model, tokens, n_latents=2)
    batch = codi.collate(examples[:4])
    seen = _spy(monkeypatch, codi, model)
    got = codi(batch)["kd"]
    s_states, t_states = seen["student"].hidden_states, seen["teacher"].hidden_states
    assert len(s_states) == len(t_states) == model.n_layers + 1  # the embedding output and every block's
    rows = torch.arange(4)
    per_layer, raw = [], []
    for hs, ht in zip(s_states, t_states):
        s = hs[rows, batch["kd_student"]].double()
        t = ht[rows, batch["kd_teacher"]].double()
        diff = (s - t).abs()
        smooth_l1 = torch.where(diff < 1, 0.5 * diff**2, diff - 0.5).mean(-1)  # beta = 1, written out
        raw.append(smooth_l1)
        per_layer.append(smooth_l1 / t.std(-1))
    expect = torch.stack(per_layer).mean(0).mean()
    assert expect > 1e-3  # a distillation term big enough that a relative tolerance means something
    torch.testing.assert_close(got.double(), expect, rtol=1e-4, atol=0)
    # the layers and the scales differ enough that the last layer alone, or no /std, could not pass
    assert not torch.isclose(per_layer[-1].mean(), expect, rtol=1e-2, atol=0)
    assert not torch.isclose(torch.stack(raw).mean(), expect, rtol=1e-2, atol=0)


def test_the_distillation_sends_no_gradient_into_the_teacher(model, tokens, examples, monkeypatch):
    # The teacher's states get the same gradient whatever the distillation weight: only its own CE trains it.
    codi = CODI(model, tokens, n_latents=2)
    batch = codi.collate(examples[:4])
    seen = _spy(monkeypatch, codi, model)
    real_forward = model.forward

    def forward(*a, **k):
        out = real_forward(*a, **k)
        if k.get("output_hidden_states"):
            for h in out.hidden_states:
                if h.requires_grad:
                    h.retain_grad()
        return out

    monkeypatch.setattr(model, "forward", forward)
    grads, student = {}, {}
    for w in (0.0, 1.0):
        codi.w_kd = w
        torch.manual_seed(0)
        codi(batch)["loss"].backward()
        grads[w] = [None if h.grad is None else h.grad.clone() for h in seen["teacher"].hidden_states]
        student[w] = codi.prj[1].weight.grad.clone()
        model.hf.zero_grad(set_to_none=True)
        codi.zero_grad(set_to_none=True)
    assert sum(g is not None for g in grads[0.0]) >= 2
    for a, b in zip(grads[0.0], grads[1.0]):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=1e-9)
    assert not torch.allclose(student[0.0], student[1.0])  # the student does learn from the distillation
