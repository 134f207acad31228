"""Linear readout of sentiment as a positive control on any model (``thinklens run validate --model smollm2-135m``).

Sentiment is linearly readable from the residual stream of small pretrained LMs (Tigges et al. 2023), peaking in
the middle layers. Template sentences whose sentiment is set by one adjective (``data/real/sentiment_templates.json``)
are split by adjective into three disjoint sets: train, selection and report. A :class:`~thinklens.probes.estimators.LinearProbe`
per layer (the last token's ``resid_post``) is fit on train; the layer with the best selection accuracy is chosen,
and its accuracy on the report adjectives, which neither the probe nor the choice saw, is the statistic.

- ``readout planted``: recovered when the report accuracy is at least :data:`MIN_ACCURACY` with its interval
  (a bootstrap over adjectives: sentences of one adjective are not independent) above the shuffled-label control's
  (the same probe and layer fit on permuted train labels). Reported beside it: accuracy per layer, the best layer's
  depth, and the difference-of-means direction's accuracy and cosine with the probe.
- ``readout null``: every label permuted across sentences (no variable to read): no effect when the report accuracy
  is shown to lie within 0.5 +- :data:`MARGIN` (TOST over sentences).

Example:
    >>> [s.key for s in SETTINGS]
    ['readout/planted', 'readout/null']
    >>> len(sentences(24, seed=0)[0])
    24
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import bootstrap_units
from thinklens.calibration.tost import tost_mean
from thinklens.probes.datasets import prompt_states
from thinklens.probes.estimators import DiffMeanProbe, LinearProbe
from thinklens.zoo.registry import repo_root

MIN_ACCURACY = 0.8
"""Report accuracy the planted verdict needs."""
MARGIN = 0.1
"""Accuracy distance from 0.5 within which the null must be shown to lie."""
SPLITS = (12, 6, 6)
"""Adjectives per polarity in train, selection and report."""


@dataclass(frozen=True)
class Plan:
    """How many sentences a setting captures."""

    n_sentences: int
    """Sentences drawn (template, noun, adjective), spread over the three adjective sets by their sizes."""


QUICK = Plan(n_sentences=360)
FULL = Plan(n_sentences=1200)


@lru_cache(maxsize=1)
def templates() -> dict[str, Any]:
    """``data/real/sentiment_templates.json``."""
    return json.loads((repo_root() / "data" / "real" / "sentiment_templates.json").read_text())


def sentences(n: int, *, seed: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``n`` sentences, their labels (1 positive), their split (0 train, 1 selection, 2 report) and their adjective;
    adjectives split per polarity by :data:`SPLITS` with a seeded shuffle."""
    doc = templates()
    rng = np.random.default_rng(seed)
    adjs: list[tuple[str, int, int]] = []  # (adjective, label, split)
    for label, key in ((1, "positive"), (0, "negative")):
        words = list(rng.permutation(doc[key]))
        edges = np.cumsum((0, *SPLITS))
        adjs += [(w, label, split) for split in range(3) for w in words[edges[split]:edges[split + 1]]]
    texts, labels, splits = [], [], []
    for i in range(n):
        adj, label, split = adjs[i % len(adjs)]
        texts.append(doc["templates"][rng.integers(len(doc["templates"]))].format(noun=rng.choice(doc["nouns"]), adj=adj))
        labels.append(label)
        splits.append(split)
    return texts, np.array(labels), np.array(splits), np.array([adjs[i % len(adjs)][0] for i in range(n)])


def _fit_score(X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, Any]:
    probe = LinearProbe().fit(X[train], y[train])
    return probe.predict(X[test]) == y[test], probe


def _measure(ctx: SettingContext, *, null: bool) -> Check:
    model = ctx.hooked()
    plan = QUICK if ctx.quick else FULL
    texts, y, split, adjectives = sentences(plan.n_sentences, seed=ctx.seed)
    rng = np.random.default_rng(ctx.seed + 1)
    if null:
        y = rng.permutation(y)  # no variable left to read
    sites = [f"resid_post.{i}" for i in range(model.n_layers)]
    feats = prompt_states(model, texts, sites)  # {site: [n, d]}
    train, select, report = (split == 0), (split == 1), (split == 2)
    select_acc = {s: float(_fit_score(feats[s], y, train, select)[0].mean()) for s in sites}
    best = max(sites, key=lambda s: select_acc[s])
    X = feats[best]
    correct, probe = _fit_score(X, y, train, report)
    details: dict[str, Any] = {"best_site": best, "depth": round((int(best.split(".")[1]) + 1) / model.n_layers, 3),
                               "selection_accuracy": select_acc, "n_train": int(train.sum()), "model": ctx.model}
    if null:
        eq = tost_mean(correct.astype(float) - 0.5, margin=MARGIN)
        details.update(tost_p=eq.p, margin=MARGIN)
        return Check("report_accuracy", 0.5 + eq.mean, (0.5 + eq.ci[0], 0.5 + eq.ci[1]), "no-effect" if eq.equivalent else
                     "failed", n=len(correct), target=f"accuracy on shuffled labels within 0.5 +- {MARGIN} (TOST)",
                     details=details)
    shuffled, _ = _fit_score(X, np.where(train, rng.permutation(y), y), train, report)
    words = adjectives[report]
    units = sorted(set(words))
    unit_idx = [np.flatnonzero(words == w) for w in units]

    def by_adjective(acc: np.ndarray):
        return lambda idx: np.array([acc[np.concatenate([unit_idx[i] for i in row])].mean() for row in idx])

    ci = bootstrap_units(len(units), by_adjective(correct.astype(float)), seed=ctx.seed, n_boot=500)
    ci_shuffled = bootstrap_units(len(units), by_adjective(shuffled.astype(float)), seed=ctx.seed, n_boot=500)
    dm = DiffMeanProbe().fit(X[train], y[train])
    diff = X[train][y[train] == 1].mean(0) - X[train][y[train] == 0].mean(0)
    w = probe.coef_.ravel() / probe.scale_  # the probe's direction in the residual's own coordinates
    details.update(shuffled_accuracy=float(shuffled.mean()), shuffled_ci=list(ci_shuffled), n_adjectives=len(units),
                   diffmean_accuracy=float((dm.predict(X[report]) == y[report]).mean()),
                   probe_diffmean_cosine=float(w @ diff / (np.linalg.norm(w) * np.linalg.norm(diff))))
    acc = float(correct.mean())
    ok = acc >= MIN_ACCURACY and ci[0] > ci_shuffled[1]
    return Check("report_accuracy", acc, ci, "recovered" if ok else "failed", n=len(correct),
                 target=f"held-out-adjective accuracy >= {MIN_ACCURACY}, interval above the shuffled-label control's",
                 details=details)


SETTINGS = [
    Setting("readout", "planted", "recovered", partial(_measure, null=False), kind="benchmark", on_model=True,
            help=f"a linear probe reads sentiment on held-out adjectives (>= {MIN_ACCURACY}, above shuffled labels)"),
    Setting("readout", "null", "no-effect", partial(_measure, null=True), on_model=True,
            help=f"labels shuffled across sentences: held-out accuracy within 0.5 +- {MARGIN} (TOST)"),
]
