"""Saved latent models: safetensors + JSON only (never pickle).

A saved latent model is an HF ``save_pretrained`` folder (weights in float16, config float32, as
the zoo), its tokenizer, ``latent.json`` (method and settings) and, for CODI, ``projection.safetensors``.
Training checkpoints (weights, optimizer state, JSON state) are the core's: :mod:`thinklens.engine.training`.

Example:
    >>> # save_latent_model(run.path / "model", model, {"method": "codi", ...}, {"projection": module.prj})
    >>> # read_latent_meta("data/zoo/tiny-codi")["method"]  ->  'codi'
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn

from thinklens.errors import ThinklensError
from thinklens.runs.folders import atomic_write_json, replace_dir


def merge_lora(hf: nn.Module) -> nn.Module:
    """Fold injected LoRA adapters into their base layers and remove them (in place)."""
    try:
        from peft.tuners.lora import LoraLayer  # lazy: optional dependency (peft)
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
