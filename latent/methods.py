"""The registry of latent methods: build a trainer module and its phases from a config, and load a
saved latent model for inference.

Example:
    >>> from latent.config import CODIConfig
    >>> [p.name for p in phases_for(CODIConfig(steps=10))]
    ['codi']
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch import nn

from latent.checkpoint import read_latent_meta
from latent.config import CoconutConfig, CODIConfig, LatentSFTConfig, TrainConfig
from latent.data import Example, LatentTokens, latent_tokens
from thinklens.errors import ThinklensError
from thinklens.tasks import ANSWER_MARKER

if TYPE_CHECKING:
    from thinklens.model import HookedModel


@dataclass(frozen=True)
class Phase:
    """One stretch of training with its own optimizer (Coconut stages, Latent-SFT runs)."""

    name: str
    steps: int
    enter: Callable[[nn.Module], None]
    """Sets the module up for this phase (stage, trainable parts)."""


def phases_for(cfg: TrainConfig) -> list[Phase]:
    """The phases of a config, in order (phases with 0 steps are skipped)."""
    if isinstance(cfg, CoconutConfig):
        out = [Phase(f"stage-{s}", cfg.stage_steps, lambda m, s=s: setattr(m, "stage", s)) for s in range(1, cfg.max_stage + 1)]
        if cfg.final_stage_steps:
            out.append(Phase("stage-all", cfg.final_stage_steps, lambda m: setattr(m, "stage", cfg.max_stage + 1)))
        return out
    if isinstance(cfg, CODIConfig):
        return [Phase("codi", cfg.steps, lambda m: None)]
    if isinstance(cfg, LatentSFTConfig):
        steps = {"encoder": cfg.encoder_steps, "decoder": cfg.decoder_steps, "joint": cfg.joint_steps,
                 "stage2": cfg.stage2_steps}
        return [Phase(p, n, lambda m, p=p: m.set_phase(p)) for p, n in steps.items() if n > 0]
    raise ThinklensError.of("config", type(cfg).__name__, "CoconutConfig, CODIConfig or LatentSFTConfig", "pick a method")


def build_module(cfg: TrainConfig, model: "HookedModel", tokens: LatentTokens) -> nn.Module:
    """The trainer module of a config (its ``forward(batch)`` returns a dict with ``loss``)."""
    from latent.codi import CODI
    from latent.continuous import Coconut
    from latent.latent_sft import LatentSFT

    if isinstance(cfg, CoconutConfig):
        return Coconut(model, tokens, c=cfg.c, max_stage=cfg.max_stage)
    if isinstance(cfg, CODIConfig):
        return CODI(model, tokens, n_latents=cfg.n_latents, w_kd=cfg.w_kd, use_projection=cfg.projection,
                    prj_dim=cfg.prj_dim, prj_dropout=cfg.prj_dropout, prj_match_scale=cfg.prj_match_scale)
    if isinstance(cfg, LatentSFTConfig):
        return LatentSFT(model, tokens, c=cfg.c, top_k=cfg.top_k, kl_weight=cfg.kl_weight, ce_weight=cfg.ce_weight,
                         gumbel=cfg.gumbel)
    raise ThinklensError.of("config", type(cfg).__name__, "a latent method config", "pick a method")


def resolve_model(name: str) -> str:
    """A zoo sibling folder (``data/zoo/<name>``, e.g. tiny-codi) for a bare name, else the name itself."""
    from thinklens.zoo.registry import zoo_dir

    if "/" not in name and (zoo_dir() / name / "config.json").is_file():
        return str(zoo_dir() / name)
    return name


def load_model(name: str, *, device: str | torch.device = "cpu") -> "HookedModel":
    from thinklens.model import HookedModel

    return HookedModel.load(resolve_model(name), device=device)


def marker_index(ids: list[int], marker: list[int]) -> int:
    """Tokens before the first answer marker (all of them when there is none): the explicit reasoning."""
    n = len(marker)
    for i in range(len(ids) - n + 1):
        if ids[i:i + n] == marker:
            return i
    return len(ids)


class LatentModel:
    """A saved latent model ready for inference: ``infer(examples)`` -> text, answer, reasoning positions."""

    def __init__(self, model: "HookedModel", meta: dict, module: nn.Module, tokens: LatentTokens):
        self.model, self.meta, self.module, self.tokens = model, meta, module, tokens
        self.method = meta["method"]

    @torch.no_grad()
    def infer(self, examples: list[Example], *, batch_size: int = 64) -> list[dict[str, Any]]:
        from thinklens.answers import parse_answer

        cfg = self.meta["config"]
        marker = self.model.tokenizer(" " + ANSWER_MARKER, add_special_tokens=False)["input_ids"]
        out: list[dict[str, Any]] = []
        for i in range(0, len(examples), batch_size):
            chunk = examples[i:i + batch_size]
            if self.method == "latent-sft":
                res = self.module.infer(chunk, max_latent_steps=cfg["max_latent_steps"])
            else:
                n = cfg["n_latents"] if self.method == "codi" else cfg["c"] * cfg["max_stage"]
                longest = max(len(ex.cot) for ex in chunk) + 8
                res = self.module.infer(chunk, n, max_new_tokens=longest)
            for ex, r in zip(chunk, res):
                text = self.model.tokenizer.decode(r["ids"], skip_special_tokens=True)
                explicit = marker_index(r["ids"], marker)
                out.append({"text": text, "pred": parse_answer(text), "correct": parse_answer(text) == ex.value,
                            "latent_steps": len(r["latents"]), "explicit_tokens": explicit,
                            "reasoning_positions": len(r["latents"]) + explicit, "latents": r["latents"]})
        return out


def load_side_state(module: nn.Module, folder: Path, meta: dict) -> None:
    """Load what a saved latent model keeps beside the LM weights into ``module`` (CODI's projection)."""
    from safetensors.torch import load_file

    if meta["method"] == "codi" and meta["config"]["projection"]:
        module.prj.load_state_dict(load_file(str(Path(folder) / "projection.safetensors")))


def load_latent_model(path: str, *, device: str | torch.device = "cpu") -> LatentModel:
    """Load a folder written by a latent trainer (``latent.json`` says which method)."""
    from latent.codi import CODI
    from latent.continuous import Coconut
    from latent.latent_sft import LatentSFT

    folder = Path(resolve_model(path))
    meta = read_latent_meta(folder)
    model = load_model(str(folder), device=device)
    tokens = latent_tokens(model.tokenizer)
    cfg = meta["config"]
    if meta["method"] == "codi":
        module: nn.Module = CODI(model, tokens, n_latents=cfg["n_latents"], use_projection=cfg["projection"],
                                 prj_dim=cfg["prj_dim"], prj_dropout=cfg["prj_dropout"])
        load_side_state(module, folder, meta)
    elif meta["method"] == "coconut":
        module = Coconut(model, tokens, c=cfg["c"], max_stage=cfg["max_stage"])
    elif meta["method"] == "latent-sft":
        module = LatentSFT(model, tokens, c=cfg["c"], top_k=cfg["top_k"], encoder=nn.Identity())  # no encoder at inference
    else:
        raise ThinklensError.of("latent.json method", meta["method"], "coconut, codi or latent-sft", "re-train the model")
    module.to(model.device).eval()
    return LatentModel(model, meta, module, tokens)
