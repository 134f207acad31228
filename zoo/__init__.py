"""Training and evaluating the embedded model zoo: recipes, training batches, the trainer, the
held-out evaluator, and their jobs ``zoo-train`` and ``zoo-eval``; GRPO (:mod:`zoo.grpo`, ``thinklens run grpo``),
which publishes the zoo's ``tiny-grpo``, the reasoning-vector donor.

The core (:mod:`thinklens.zoo`) keeps what every capability needs to find, load and build zoo models;
this package is how the committed weights under ``data/zoo/`` are made and checked.

Example:
    >>> from zoo.recipes import RECIPES
    >>> RECIPES["tiny-cot"].init
    'tiny-pre'
"""
