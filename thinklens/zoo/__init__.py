"""The embedded model zoo: tiny Llama models trained on the synthetic reasoning task, committed under
``data/zoo/<name>/`` so a fresh offline clone can load them without training.

All siblings (``tiny-direct``, ``tiny-cot``, ``tiny-think``) are fine-tuned from one ``tiny-pre``, so
weight arithmetic between them is meaningful.

Example:
    >>> from thinklens.zoo import ZOO_NAMES, zoo_path
    >>> from transformers import AutoModelForCausalLM  # doctest: +SKIP
    >>> model = AutoModelForCausalLM.from_pretrained(zoo_path("tiny-think"))  # doctest: +SKIP

Retrain: ``thinklens zoo train tiny-pre`` then ``thinklens zoo train tiny-cot`` (etc.); evaluate:
``thinklens zoo eval``. Heavy imports (torch, transformers) happen inside the functions.
"""

from thinklens.zoo.registry import ZOO_DESCRIPTIONS, ZOO_NAMES, check_zoo_name, is_zoo_name, zoo_dir, zoo_path

__all__ = [
    "ZOO_DESCRIPTIONS", "ZOO_NAMES", "check_zoo_name", "evaluate_zoo_model", "is_zoo_name", "load_zoo_model",
    "train_zoo_model", "zoo_dir", "zoo_path",
]


def __getattr__(name: str):
    # Lazy: `from thinklens.zoo import train_zoo_model` should not import torch for registry users.
    if name == "train_zoo_model":
        from thinklens.zoo.train import train_zoo_model

        return train_zoo_model
    if name == "evaluate_zoo_model":
        from thinklens.zoo.evaluate import evaluate_zoo_model

        return evaluate_zoo_model
    if name == "load_zoo_model":
        from thinklens.zoo.modeling import load_zoo_model

        return load_zoo_model
    raise AttributeError(f"module 'thinklens.zoo' has no attribute {name!r}")
