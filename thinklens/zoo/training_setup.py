"""What one architecture of the zoo brings to the zoo's one trainer (:class:`ZooTraining`): the word-level Llama
models (:func:`thinklens.zoo.trainer.llama_training`) and tiny-r1's Qwen2 (:func:`thinklens.zoo.r1_train.r1_training`)
each build one, and :func:`thinklens.zoo.trainer.train_zoo_model` runs it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclasses.dataclass(frozen=True)
class ZooTraining:
    """What one architecture of the zoo brings to :func:`train_zoo_model`: the model to train (fresh or its
    parent), its schedule and batches, what a checkpoint must match, its zoo.json entries, and how its folder is
    written and evaluated."""

    model: torch.nn.Module
    total_steps: int
    lr: Callable[[int], float]
    """Learning rate at a step."""
    batch: Callable[[np.random.Generator], dict[str, torch.Tensor]]
    """A training batch drawn from the stream of one step."""
    identity: dict
    """What a checkpoint must match to be resumed."""
    meta_fields: dict
    """The trainer's own zoo.json entries."""
    write_folder: Callable[[Path, dict], object]
    """Writes the trained model's folder with its zoo.json: ``write_folder(folder, meta)`` (not named ``save``:
    importing nnsight mounts ``save`` on every object, which would give such a field a default)."""
    evaluate: Callable[[Path, int, int], Any]
    """Held-out accuracy of a written folder: ``evaluate(folder, n_per_steps, seed)``."""
    keep_last_checkpoint: bool = False
    """Keep the last checkpoint after publishing (a continuation phase added later resumes from it)."""
