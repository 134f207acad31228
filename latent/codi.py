"""CODI (Shen et al., arXiv 2502.21074): one model is teacher (explicit CoT) and student (N continuous
thoughts through a projection); the student's hidden states at the token before the answer number are
pulled to the teacher's, at every layer.

loss = CE_student + w_kd * L_kd + CE_teacher, with
L_kd = mean over the L+1 hidden states of SmoothL1(student, teacher.detach()) / std(teacher).
The distillation position is found by searching the answer segment (marker + number) in both
sequences, never by a fixed offset. The last CoT step is dropped from the teacher's chain, as in the reference
(its include_last_cot, off by default); ``include_last_step`` keeps it.

This module is CODI's entry of the method table (:mod:`thinklens.latent.methods`): its phase, its trainer, its
inference, its projection saved beside the weights and the tags of its table label.

Example:
    >>> # codi = CODI(model, tokens, n_latents=6)
    >>> # losses = codi(codi.collate(examples)); losses["loss"].backward()
    >>> # preds = codi.infer(examples, n_latents=6)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from thinklens.latent.continuous_thought import ContinuousThought, answer_budget
from thinklens.latent.methods import Phase
from thinklens.latent.segments import Example, LatentTokens, find_subsequence, per_example_ce, right_pad, shifted_labels
from thinklens.latent.session import LatentSession

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.latent.config import CODIConfig


def projection(d: int, hidden: int, dropout: float) -> nn.Sequential:
    """CODI's projection: Dropout, Linear d->p, GELU, Linear p->d, LayerNorm."""
    return nn.Sequential(nn.Dropout(dropout), nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d), nn.LayerNorm(d))


def kd_positions(examples: list[Example], rows: list[list[int]]) -> list[int]:
    """Index, in each row, of the token just before the answer number (last marker token).

    The answer segment (marker + number) is searched as a sub-sequence (its last occurrence), so
    the position is right whatever precedes it (a dropped step, latents, another tokenizer).

    Example:
        >>> ex = Example(prompt=(1,), steps=(), answer=(40, 55), marker_len=1, gold="45")
        >>> kd_positions([ex], [[1, 9, 9, 40, 55, 2]])
        [3]
    """
    out = []
    for ex, row in zip(examples, rows):
        at = find_subsequence(row, ex.answer)
        if at < 0:  # a programming error (the collate built the row), not user input
            raise RuntimeError(f"answer segment {ex.answer} not found in {row}")
        out.append(at + ex.marker_len - 1)
    return out


def teacher_chain(ex: Example, include_last_step: bool = False) -> list[int]:
    """The teacher's CoT: every step but the last (the answer follows it directly), or every step."""
    return [t for s in (ex.steps if include_last_step else ex.steps[:-1]) for t in s]


class CODI(ContinuousThought):
    """CODI with shared teacher/student weights; ``projection=False`` is the no-projection ablation."""

    def __init__(self, model: "HookedModel", tokens: LatentTokens, *, n_latents: int = 6, w_kd: float = 1.0,
                 use_projection: bool = True, prj_dim: int = 0, prj_dropout: float = 0.0, prj_match_scale: bool = False,
                 include_last_step: bool = False):
        super().__init__(model, tokens)
        self.n_latents, self.w_kd, self.include_last_step = n_latents, w_kd, include_last_step
        d = model.d_model
        self.prj = projection(d, prj_dim or d, prj_dropout) if use_projection else nn.Identity()
        if use_projection and prj_match_scale:
            # A LayerNorm output has RMS 1 per dimension; token embeddings of a small model are ~10x
            # smaller, and a gain that starts at 1 takes far longer than a short run to shrink.
            with torch.no_grad():
                rms = model.embedding_weight.float().pow(2).mean().sqrt()
                self.prj[-1].weight.fill_(float(rms))

    def latent_input(self, h: Tensor) -> Tensor:
        return self.prj(h)

    def collate(self, examples: list[Example]) -> dict[str, Any]:
        t = self.tokens
        student = [[t.eot] + list(ex.answer) + [t.eos] for ex in examples]
        s_ids, s_mask = right_pad(student, t.pad)
        teacher = [list(ex.prompt) + teacher_chain(ex, self.include_last_step) + list(ex.answer) + [t.eos] for ex in examples]
        t_ids, t_mask = right_pad(teacher, t.pad)
        return {
            "prompt": self.prompt_batch(examples), "suffix": (s_ids, s_mask),
            "labels": shifted_labels(s_ids, [1] * len(examples), s_mask),
            "kd_student": torch.tensor(kd_positions(examples, student)),
            "teacher": (t_ids, t_mask), "teacher_labels": shifted_labels(t_ids, [len(ex.prompt) for ex in examples], t_mask),
            "kd_teacher": torch.tensor(kd_positions(examples, teacher)),
        }

    def forward(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        per = self.example_losses(batch)
        loss = (per["ce_student"] + self.w_kd * per["kd"] + per["ce_teacher"]).mean()
        return {"loss": loss, **{k: v.mean().detach() for k, v in per.items()}}

    def example_losses(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        """The three terms of the loss, one value per example (``[batch]`` each): ``ce_student``, ``ce_teacher`` and
        ``kd`` (the distillation distance at the token before the answer, averaged over the hidden states)."""
        with LatentSession(self.model, latent_id=self.tokens.latent) as s:
            out, _ = self.run(s, batch["prompt"], self.n_latents, batch["suffix"])
        dev = out.logits.device
        ce_s = per_example_ce(out.logits, batch["labels"].to(dev))  # [batch]
        t_ids, t_mask = (x.to(dev) for x in batch["teacher"])
        teacher = self.model.forward({"input_ids": t_ids, "attention_mask": t_mask}, output_hidden_states=True)
        ce_t = per_example_ce(teacher.logits, batch["teacher_labels"].to(dev))  # [batch]
        rows = torch.arange(t_ids.shape[0], device=dev)
        ks, kt = batch["kd_student"].to(dev), batch["kd_teacher"].to(dev)
        kd = torch.zeros_like(ce_s)
        for hs, ht in zip(out.hidden_states, teacher.hidden_states):  # L+1 states, embedding output included
            s_sel = hs[rows, ks].float()  # [batch, d]
            t_sel = ht[rows, kt].float().detach()  # [batch, d] the teacher's own CE still trains it
            # per-example std (the reference divides by the std over the whole batch; see the notes)
            kd = kd + nn.functional.smooth_l1_loss(s_sel, t_sel, reduction="none").mean(-1) / t_sel.std(-1).clamp_min(1e-6)
        return {"ce_student": ce_s, "ce_teacher": ce_t, "kd": kd / len(out.hidden_states)}

    def student_outputs(self, examples: list[Example]) -> Tensor:
        """Logits ``[batch, suffix, vocab]`` of the student's answer segment (batch-invariance tests)."""
        batch = self.collate(examples)
        with torch.no_grad(), LatentSession(self.model, latent_id=self.tokens.latent) as s:
            out, _ = self.run(s, batch["prompt"], self.n_latents, batch["suffix"])
        return out.logits


# ---------------------------------------------------------------- the method table's functions


def train_phases(cfg: "CODIConfig") -> list[Phase]:
    """One phase: teacher and student trained together for ``steps``."""
    return [Phase("codi", cfg.train_steps, lambda m: None)]


def build_trainer(cfg: "CODIConfig", model: "HookedModel", tokens: LatentTokens) -> CODI:
    return CODI(model, tokens, n_latents=cfg.n_latents, w_kd=cfg.w_kd, use_projection=cfg.projection,
                prj_dim=cfg.prj_dim, prj_dropout=cfg.prj_dropout, prj_match_scale=cfg.prj_match_scale,
                include_last_step=cfg.include_last_step)


def build_for_inference(model: "HookedModel", tokens: LatentTokens, saved: dict) -> CODI:
    return CODI(model, tokens, n_latents=saved["n_latents"], use_projection=saved["projection"],
                prj_dim=saved["prj_dim"], prj_dropout=saved["prj_dropout"], w_kd=saved.get("w_kd", 1.0),
                include_last_step=saved.get("include_last_step", False))  # the last two: its losses as trained


def infer_examples(module: CODI, examples: list[Example], saved: dict) -> list[dict]:
    """``n_latents`` latents, then greedy decoding."""
    return module.infer(examples, saved["n_latents"], max_new_tokens=answer_budget(examples))


def side_modules(module: CODI, saved: dict) -> dict[str, nn.Module]:
    """The projection (``projection.safetensors``), unless trained without one."""
    return {"projection": module.prj} if saved["projection"] else {}


def label_tags(saved: dict, prior_steps: int | None = None) -> str:
    """What sets a CODI run apart from the default config, for the table label (``prior_steps``: the steps of
    the model a continued run started from).

    Example:
        >>> label_tags({"w_kd": 0.0, "projection": True, "prj_match_scale": True, "lr": 0.002})
        ' (no distillation)'
        >>> label_tags({"w_kd": 1.0, "projection": False, "lr": 0.002, "steps": 1600})
        ' (no projection, 1600 steps)'
        >>> label_tags({"lr": 0.0005, "prj_match_scale": True, "steps": 2000}, prior_steps=12000)
        ' (lr 0.0005, 12000+2000 steps)'
        >>> label_tags({"prj_match_scale": True, "include_last_step": True, "train_steps": 7000})
        ' (full teacher chain, 7000 steps)'
        >>> label_tags({"prj_match_scale": True, "n_latents": 12, "train_steps": 7000})
        ' (12 latents, 7000 steps)'
    """
    tags = []
    if saved.get("n_latents", 6) != 6:  # the paper's N
        tags.append(f"{saved['n_latents']} latents")
    if saved.get("w_kd", 1.0) == 0:
        tags.append("no distillation")
    elif saved.get("w_kd", 1.0) != 1.0:
        tags.append(f"w_kd={saved['w_kd']:g}")
    if not saved.get("projection", True):
        tags.append("no projection")
    elif not saved.get("prj_match_scale", False):
        tags.append("LN gain 1")
    if saved.get("include_last_step", False):
        tags.append("full teacher chain")
    if saved.get("lr") not in (None, 0.002):
        tags.append(f"lr {saved['lr']:g}")
    steps = saved.get("train_steps", saved.get("steps"))  # "steps" in latent.json written before the rename
    if steps is not None:  # training length matters at this scale: always shown
        tags.append(f"{prior_steps}+{steps} steps" if prior_steps else f"{steps} steps")
    return f" ({', '.join(tags)})" if tags else ""
