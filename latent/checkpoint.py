"""Checkpoints and saved latent models: safetensors + JSON only (never pickle).

A training checkpoint is a folder with ``model.safetensors`` (the whole trainer module: model,
projection, encoder), ``optimizer.safetensors`` (AdamW moments and step counts as tensors, keyed by
parameter name) and ``state.json`` (phase, step, loss history, elapsed time). It is written to a
temporary folder and swapped in, so a kill never leaves a half-written checkpoint.

A saved latent model is an HF ``save_pretrained`` folder (weights in float16, config float32, as
the zoo), its tokenizer, ``latent.json`` (method and settings) and, for CODI, ``projection.safetensors``.

Example:
    >>> # save_checkpoint(run.path / "checkpoint", module, optimizer, {"phase": 0, "step": 50})
    >>> # state = load_checkpoint(run.path / "checkpoint", module)   # then load_optimizer(...)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import nn

from thinklens.errors import ThinklensError
from thinklens.runs import atomic_write_json, replace_dir


def optimizer_tensors(module: nn.Module, opt: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """``{"<param name>::<key>": tensor}`` for every optimizer state entry (``step`` included)."""
    out: dict[str, torch.Tensor] = {}
    for name, p in module.named_parameters():
        for key, value in opt.state.get(p, {}).items():
            out[f"{name}::{key}"] = torch.as_tensor(value).detach().cpu().clone().contiguous()
    return out


def load_optimizer(path: Path, module: nn.Module, opt: torch.optim.Optimizer) -> None:
    """Restore optimizer state written by :func:`save_checkpoint` into ``opt`` (same parameter names)."""
    from safetensors.torch import load_file

    tensors = load_file(str(Path(path) / "optimizer.safetensors"))
    by_name: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        name, k = key.split("::", 1)
        by_name.setdefault(name, {})[k] = value
    for name, p in module.named_parameters():
        if name in by_name:
            opt.state[p] = {k: v.to(p.device) if k != "step" else v for k, v in by_name[name].items()}


def save_checkpoint(folder: Path, module: nn.Module, opt: torch.optim.Optimizer | None, state: dict) -> None:
    """Write a checkpoint atomically (temp folder, then rename)."""
    from safetensors.torch import save_file, save_model

    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model(module, str(tmp / "model.safetensors"))  # drops the tied lm_head copy itself
    save_file(optimizer_tensors(module, opt) if opt is not None else {}, str(tmp / "optimizer.safetensors"))
    atomic_write_json(tmp / "state.json", state)
    replace_dir(tmp, folder)


def load_checkpoint(folder: Path, module: nn.Module) -> dict:
    """Load the module weights of a checkpoint; returns its JSON state."""
    from safetensors.torch import load_model

    folder = Path(folder)
    load_model(module, str(folder / "model.safetensors"), strict=True, device=str(next(module.parameters()).device))
    return json.loads((folder / "state.json").read_text())


# ---------------------------------------------------------------- saved latent models


def merge_lora(hf: nn.Module) -> nn.Module:
    """Fold injected LoRA adapters into their base layers and remove them (in place)."""
    try:
        from peft.tuners.lora import LoraLayer
    except ImportError:  # no peft: nothing can have been injected
        return hf
    for name, mod in list(hf.named_modules()):
        if isinstance(mod, LoraLayer):
            mod.merge()
            parent = hf.get_submodule(name.rsplit(".", 1)[0]) if "." in name else hf
            setattr(parent, name.rsplit(".", 1)[-1], mod.get_base_layer())
    return hf


def save_latent_model(folder: Path, model: Any, meta: dict, extra: dict[str, nn.Module] | None = None) -> Path:
    """Write a loadable latent model folder (see the module docstring); atomic via a temp folder."""
    from safetensors.torch import save_file

    folder = Path(folder)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    hf = model.hf
    hf.config.dtype = "float32"
    hf.save_pretrained(str(tmp))
    tied = getattr(hf.config, "tie_word_embeddings", False)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in hf.state_dict().items()
             if not (tied and k == "lm_head.weight")}
    for f in tmp.glob("model*.safetensors"):
        f.unlink()
    save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    model.tokenizer.save_pretrained(str(tmp))
    for name, mod in (extra or {}).items():
        save_file({k: v.detach().contiguous() for k, v in mod.state_dict().items()}, str(tmp / f"{name}.safetensors"))
    atomic_write_json(tmp / "latent.json", meta)
    replace_dir(tmp, folder)
    return folder


def read_latent_meta(folder: Path) -> dict:
    """``latent.json`` of a saved latent model, with a clear error for other folders."""
    p = Path(folder) / "latent.json"
    if not p.is_file():
        raise ThinklensError.of("latent model", str(folder), "a folder written by a latent trainer (with latent.json)",
                                "train one with `thinklens run codi --publish data/zoo/tiny-codi`")
    return json.loads(p.read_text())
