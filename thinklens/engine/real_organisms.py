"""Fine-tunes of a packaged real model that thinklens commits as a small LoRA adapter (``data/real-organisms/<name>/``).

A real organism is a packaged real model (:mod:`thinklens.engine.real_models`) plus a committed adapter of a few MB:
``smol-r1`` is SmolLM2-135M-Instruct taught the R1 format on thinklens's synthetic chains with re-check rounds (its
recipe and evaluation: :mod:`thinklens.zoo.smol_r1`). On first use :func:`organism_folder` merges the adapter into the
converted base (peft's ``merge_and_unload``) and caches the merged model as an ordinary folder next to the base's,
keyed by the base's GGUF hash and the adapter's hash, so ``HookedModel.load("smol-r1")`` reads it like any folder;
the tokenizer is the base's with the organism's own chat template (from its ``organism.json``).

Without the base's package the error names ``make real``; without the adapter it names the command that trains it.

Example:
    >>> sorted(REAL_ORGANISMS), REAL_ORGANISMS["smol-r1"].base
    (['smol-r1', 'smol-r1-base', 'smol-r1-once'], 'smollm2-135m')
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from thinklens.engine.gguf import SOURCE_FILE, cache_root, publish_folder
from thinklens.errors import ThinklensError

ADAPTER_FILE = "adapter_model.safetensors"
ORGANISM_FILE = "organism.json"


@dataclass(frozen=True)
class RealOrganism:
    """A packaged real model fine-tuned by thinklens, committed as an adapter."""

    name: str
    """Its name in thinklens (``--model smol-r1``)."""
    base: str
    """The packaged real model it is fine-tuned from (a :data:`thinklens.engine.real_models.REAL_MODELS` name)."""
    adapter: str
    """The adapter folder, relative to the repository root."""
    description: str
    """One line: what it is."""
    once_sibling: str | None = None
    """Its sibling organism that concludes once (no re-check rounds; LYNX's null on real weights), if it has one."""


REAL_ORGANISMS: dict[str, RealOrganism] = {o.name: o for o in (
    RealOrganism("smol-r1-base", "smollm2-135m", "data/real-organisms/smol-r1-base",
                 "SmolLM2-135M-Instruct + LoRA taught the R1 format (<think> ... </think>, \\boxed{}) and the arithmetic "
                 "on thinklens's synthetic chains with 1-2 re-check rounds: the parent of smol-r1 and smol-r1-once"),
    RealOrganism("smol-r1", "smollm2-135m", "data/real-organisms/smol-r1",
                 "smol-r1-base fine-tuned to re-check twice after its answer; ground truth per trace "
                 "(thinklens/zoo/smol_r1.py)", once_sibling="smol-r1-once"),
    RealOrganism("smol-r1-once", "smollm2-135m", "data/real-organisms/smol-r1-once",
                 "smol-r1-base fine-tuned as long to conclude once (no re-check rounds): its cues all come before the "
                 "answer is known (LYNX's null on real weights; thinklens/zoo/smol_r1.py)"),
)}


def once_sibling(name: str) -> str | None:
    """The organism that concludes once beside organism ``name`` (None: ``name`` is no organism or has none).

    Example:
        >>> once_sibling("smol-r1"), once_sibling("tiny-r1")
        ('smol-r1-once', None)
    """
    org = REAL_ORGANISMS.get(name)
    return None if org is None else org.once_sibling


def is_organism_name(name: str) -> bool:
    """Whether ``name`` names a real organism."""
    return name in REAL_ORGANISMS


def adapter_dir(name: str) -> Path:
    """The committed adapter folder of organism ``name`` (``<repo>/data/real-organisms/<name>``)."""
    return Path(__file__).resolve().parents[2] / REAL_ORGANISMS[name].adapter


def adapter_present(name: str) -> bool:
    """Whether organism ``name``'s adapter is committed (trained)."""
    d = adapter_dir(name)
    return (d / ADAPTER_FILE).is_file() and (d / ORGANISM_FILE).is_file()


def _adapter_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for fname in ("adapter_config.json", ADAPTER_FILE, ORGANISM_FILE):
        h.update((folder / fname).read_bytes())
    return h.hexdigest()


def organism_folder(name: str, *, base_folder: Callable[..., Path], progress: bool = True) -> Path:
    """The cached merged folder of organism ``name``, merging its adapter into the converted base on first use.

    ``base_folder(base_name, progress=...)`` gives the converted folder of its packaged base
    (:func:`thinklens.engine.real_models.real_model_folder`, which calls this: the packaged models know their
    organisms, not the other way round).
    """
    org = REAL_ORGANISMS[name]
    folder = adapter_dir(name)
    if not adapter_present(name):
        raise ThinklensError.of("real organism", name, f"its adapter in {org.adapter}/ ({ADAPTER_FILE}, {ORGANISM_FILE})",
                                f"train it: thinklens run zoo-train --model {name} --minutes 45")
    base = base_folder(org.base, progress=progress)  # names `make real` when the base's package is absent
    digest = _adapter_digest(folder)
    target = cache_root() / f"{name}-{base.name.rsplit('-', 1)[-1][:8]}-{digest[:16]}"
    if (target / SOURCE_FILE).is_file():
        return target
    if progress:
        print(f"[thinklens] merging {org.adapter} into {org.base} once into {target}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()

    def build(tmp: Path) -> dict:
        merge_adapter(base, folder, tmp)
        return {**json.loads((base / SOURCE_FILE).read_text()), "organism": name, "base": org.base,
                "adapter": org.adapter, "adapter_sha256": digest,
                "note": "the base's dequantized weights with thinklens's LoRA adapter merged in"}

    publish_folder(target, build)
    if progress:
        print(f"[thinklens] merged in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return target


def merge_adapter(base: Path, adapter: Path, out: Path) -> Path:
    """Write ``base`` (a model folder) with the peft adapter in ``adapter`` merged into its weights to ``out``; the
    tokenizer is the base's with the chat template of the adapter's ``organism.json``."""
    import torch  # lazy: CLI start-up (torch)
    from peft import PeftModel  # lazy: CLI start-up (peft)
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: CLI start-up (transformers)

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out))
    tok = AutoTokenizer.from_pretrained(str(base))
    tok.chat_template = json.loads((adapter / ORGANISM_FILE).read_text())["chat_template"]
    tok.save_pretrained(str(out))
    return out
