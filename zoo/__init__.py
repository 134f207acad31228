"""Training and evaluating the embedded model zoo: recipes, training batches, the trainer, the
held-out evaluator, and their jobs ``zoo-train`` and ``zoo-eval``.

The core (:mod:`thinklens.zoo`) keeps what every capability needs to find, load and build zoo models;
this package is how the committed weights under ``data/zoo/`` are made and checked.

Example:
    >>> from zoo.recipes import RECIPES
    >>> RECIPES["tiny-cot"].init
    'tiny-pre'
"""
