"""The embedded model zoo, as every capability needs it: names and folders (:mod:`.registry`), building,
saving and loading the tiny Llama models (:mod:`.modeling`) and their word-level tokenizer
(:mod:`.tokenizer`). Weights are committed under ``data/zoo/<name>/`` so a fresh offline clone loads them
without training.

All siblings (``tiny-direct``, ``tiny-cot``, ``tiny-think``) are fine-tuned from one ``tiny-pre``, so
weight arithmetic between them is meaningful.

Example:
    >>> from thinklens.zoo import ZOO_NAMES, zoo_path
    >>> from transformers import AutoModelForCausalLM  # doctest: +SKIP
    >>> model = AutoModelForCausalLM.from_pretrained(zoo_path("tiny-think"))  # doctest: +SKIP

How the committed weights are made and checked lives here too, imported only when used: one recipe per
model (:mod:`.recipes`), training batches (:mod:`.batches`), the trainer (:mod:`.trainer`), held-out
accuracy (:mod:`.accuracy`), tiny-r1's and tiny-overthink's worlds (:mod:`.r1`, :mod:`.overthink`), GRPO
(:mod:`.grpo`, which publishes ``tiny-grpo``, the reasoning-vector donor) and their jobs: ``thinklens run
zoo-train --model tiny-pre`` then ``--model tiny-cot`` (etc.), ``thinklens run zoo-eval``, ``thinklens run
grpo``. Those modules import torch and transformers; this package's own names do not (the CLI lists the zoo at
start-up), ``load_zoo_model`` loads them when first used.

    >>> from thinklens.zoo.recipes import RECIPES
    >>> RECIPES["tiny-cot"].init
    'tiny-pre'
"""

from thinklens.zoo.registry import ZOO_DESCRIPTIONS, ZOO_NAMES, check_zoo_name, is_zoo_name, zoo_dir, zoo_path

__all__ = ["ZOO_DESCRIPTIONS", "ZOO_NAMES", "check_zoo_name", "is_zoo_name", "load_zoo_model", "zoo_dir", "zoo_path"]


def __getattr__(name: str):
    if name == "load_zoo_model":  # registry users (the CLI at start-up) never import torch
        from thinklens.zoo.modeling import load_zoo_model  # lazy: CLI start-up (torch, transformers)

        return load_zoo_model
    raise AttributeError(f"module 'thinklens.zoo' has no attribute {name!r}")
