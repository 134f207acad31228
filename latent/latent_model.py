"""Saved latent models ready for inference, and the start models the trainers and evaluators load.

A folder written by a latent trainer holds the LM (``save_pretrained``), its tokenizer, ``latent.json``
(the method and its settings) and the method's side modules (CODI's ``projection.safetensors``);
:func:`load_latent_model` rebuilds the method's module through the method table.

Example:
    >>> marker_index([5, 6, 9, 7], [9])
    2
    >>> # lm = load_latent_model("tiny-codi", device="cuda")
    >>> # lm.infer(examples)[0]["reasoning_positions"]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from latent.saved_model import read_latent_meta
from latent.data import Example, LatentTokens, latent_tokens
from latent.methods import LatentMethod, method_named
from thinklens.tasks import ANSWER_MARKER

if TYPE_CHECKING:
    from thinklens.model import HookedModel


def resolve_model(name: str) -> str:
    """A zoo sibling folder (``data/zoo/<name>``, e.g. tiny-codi) for a bare name, else the name itself."""
    from thinklens.zoo.registry import zoo_dir

    if "/" not in name and (zoo_dir() / name / "config.json").is_file():
        return str(zoo_dir() / name)
    return name


def load_hooked_model(name: str, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> "HookedModel":
    """The plain :class:`~thinklens.model.HookedModel` of ``name`` (a zoo sibling folder, a folder or a hub id)."""
    from thinklens.model import HookedModel

    return HookedModel.load(resolve_model(name), device=device, dtype=dtype)


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
        self.entry: LatentMethod = method_named(self.method)

    @torch.no_grad()
    def infer(self, examples: list[Example], *, batch_size: int = 64) -> list[dict[str, Any]]:
        from thinklens.answers import parse_answer

        saved = self.meta["config"]
        marker = self.model.tokenizer(" " + ANSWER_MARKER, add_special_tokens=False)["input_ids"]
        out: list[dict[str, Any]] = []
        for i in range(0, len(examples), batch_size):
            chunk = examples[i:i + batch_size]
            res = self.entry.module.infer_examples(self.module, chunk, saved)
            for ex, r in zip(chunk, res):
                text = self.model.tokenizer.decode(r["ids"], skip_special_tokens=True)
                explicit = marker_index(r["ids"], marker)
                out.append({"text": text, "pred": parse_answer(text), "correct": parse_answer(text) == ex.value,
                            "latent_steps": len(r["latents"]), "explicit_tokens": explicit,
                            "reasoning_positions": len(r["latents"]) + explicit, "latents": r["latents"]})
        return out


def load_side_state(module: nn.Module, folder: Path, meta: dict) -> None:
    """Load what a saved latent model keeps beside the LM weights (its method's side modules) into ``module``."""
    from safetensors.torch import load_file

    for key, part in method_named(meta["method"]).module.side_modules(module, meta["config"]).items():
        part.load_state_dict(load_file(str(Path(folder) / f"{key}.safetensors")))


def load_latent_model(path: str, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> LatentModel:
    """Load a folder written by a latent trainer (``latent.json`` says which method)."""
    folder = Path(resolve_model(path))
    meta = read_latent_meta(folder)
    method = method_named(meta["method"])
    model = load_hooked_model(str(folder), device=device, dtype=dtype)
    tokens = latent_tokens(model.tokenizer)
    module = method.module.build_for_inference(model, tokens, meta["config"])
    load_side_state(module, folder, meta)
    module.to(device=model.device, dtype=dtype).eval()  # side modules in the LM's dtype
    return LatentModel(model, meta, module, tokens)
