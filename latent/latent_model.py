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
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn

from thinklens.data.answers import extract_answer, is_correct
from thinklens.data.formats import format_for
from thinklens.engine.model import HookedModel
from thinklens.latent.examples import ExampleBuilder
from thinklens.latent.methods import LatentMethod, method_named
from thinklens.latent.saved_model import read_latent_meta
from thinklens.latent.segments import Example, LatentTokens, latent_tokens
from thinklens.zoo.registry import zoo_dir


def resolve_model(name: str) -> str:
    """A zoo sibling folder (``data/zoo/<name>``, e.g. tiny-codi) for a bare name, else the name itself."""
    if "/" not in name and (zoo_dir() / name / "config.json").is_file():
        return str(zoo_dir() / name)
    return name


def load_hooked_model(name: str, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> "HookedModel":
    """The plain :class:`~thinklens.engine.model.HookedModel` of ``name`` (a zoo sibling folder, a folder or a hub id)."""
    return HookedModel.load(resolve_model(name), device=device, dtype=dtype)


def marker_index(ids: list[int], marker: list[int]) -> int:
    """Tokens before the first answer marker (all of them when there is none): the explicit reasoning."""
    n = len(marker)
    for i in range(len(ids) - n + 1):
        if ids[i:i + n] == marker:
            return i
    return len(ids)


def predicted_answer(text: str) -> int | str | None:
    """The answer of an output as :func:`thinklens.data.answers.extract_answer` reads it, as an int when it is one
    (so the zoo's records keep integer predictions).

    Example:
        >>> predicted_answer("<< 2 + 3 = 5 >> #### 5"), predicted_answer(r"so \\boxed{\\frac{1}{2}}"), predicted_answer("no")
        (5, '\\\\frac{1}{2}', None)
    """
    pred = extract_answer(text)
    if pred is not None and pred.lstrip("-").isdigit():
        return int(pred)
    return pred


def saved_prompt_format(meta: dict) -> str:
    """The prompt format a saved latent model was trained in (models saved before formats existed: the zoo's cot)."""
    return meta.get("prompt_format") or "cot"


class LatentModel:
    """A saved latent model ready for inference: ``infer(examples)`` -> text, answer, reasoning positions.

    ``builder`` makes examples in the prompt format the model was trained in (``latent.json``'s ``prompt_format``).
    """

    def __init__(self, model: "HookedModel", meta: dict, module: nn.Module, tokens: LatentTokens):
        self.model, self.meta, self.module, self.tokens = model, meta, module, tokens
        self.method = meta["method"]
        self.entry: LatentMethod = method_named(self.method)
        self.builder = ExampleBuilder(model.tokenizer, format_for(model, saved_prompt_format(meta)))

    @torch.no_grad()
    def infer(self, examples: list[Example], *, batch_size: int = 64) -> list[dict[str, Any]]:
        """Latent inference on examples (from :attr:`builder`); every answer graded by ``is_correct`` against the gold."""
        saved = self.meta["config"]
        marker = self.builder.marker_ids
        out: list[dict[str, Any]] = []
        for i in range(0, len(examples), batch_size):
            chunk = examples[i:i + batch_size]
            res = self.entry.module.infer_examples(self.module, chunk, saved)
            for ex, r in zip(chunk, res):
                text = self.model.tokenizer.decode(r["ids"], skip_special_tokens=True)
                explicit = marker_index(r["ids"], marker)
                out.append({"text": text, "pred": predicted_answer(text), "correct": is_correct(text, ex.gold),
                            "latent_steps": len(r["latents"]), "explicit_tokens": explicit,
                            "reasoning_positions": len(r["latents"]) + explicit, "latents": r["latents"]})
        return out

    def infer_problems(self, problems: Any, *, batch_size: int = 64) -> list[dict[str, Any]]:
        """:meth:`infer` on problems (synthetic or from a problem set), made into examples in the model's format."""
        return self.infer(self.builder.build_all(problems), batch_size=batch_size)


def load_side_state(module: nn.Module, folder: Path, meta: dict) -> None:
    """Load what a saved latent model keeps beside the LM weights (its method's side modules) into ``module``."""
    for key, part in method_named(meta["method"]).module.side_modules(module, meta["config"]).items():
        part.load_state_dict(load_file(str(Path(folder) / f"{key}.safetensors")))


def load_latent_model(path: str, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> LatentModel:
    """Load a folder written by a latent trainer (``latent.json`` says which method)."""
    folder = Path(resolve_model(path))
    meta = read_latent_meta(folder)
    method = method_named(meta["method"])
    model = load_hooked_model(str(folder), device=device, dtype=dtype)
    tokens = latent_tokens(model.tokenizer, method.special_tokens)
    module = method.module.build_for_inference(model, tokens, meta["config"])
    load_side_state(module, folder, meta)
    module.to(device=model.device, dtype=dtype).eval()  # side modules in the LM's dtype
    return LatentModel(model, meta, module, tokens)
