"""MI trajectories of a model: greedy generation traced at one or more blocks, scored per token
against the golden-answer vector of the same block (the measurement of Qian et al. 2025).

* rep[t]: the state at ``resid_post.L`` (a block's output, before the final norm) that produced
  generated token t; row 0 is the state at the last prompt token (``Trace.hidden``).
* h_gt: the last-token state of the same block after running the solution text through the model.
  The reference feeds the solution text alone; to condition it on the question, pass
  ``prompt + solution`` as the solution.
* The default block is the last one (``resid_post.-1``); several sites are scored in one generation.

Example:
    >>> # model = HookedModel.load("tiny-think")
    >>> # trajs = mi_trajectories(model, prompts, solutions, sites=["resid_post.-1", "resid_post.2"])
    >>> # trajs[0].curve().mi   # one score per generated token, last block
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from jaxtyping import Float
from torch import Tensor

from thinklens.analyses.mi.config import NHSICConfig
from thinklens.analyses.mi.estimator import MICurve, nhsic_trajectory
from thinklens.analyses.mi.peaks import Peaks
from thinklens.analyses.mi.thinking_tokens import TokenTrajectory
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.generation.trace import Trace

DEFAULT_SITES = ("resid_post.-1",)


@dataclass(frozen=True)
class MITrajectory:
    """One problem: its greedy trajectory and an MI curve per captured site."""

    prompt: str
    solution: str
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    """Generated tokens decoded one by one; tokens[t] was produced by the state scored in mi[t]."""
    text: str
    stop_reason: str
    curves: dict[Site, MICurve]
    """Site -> curve, in the order the sites were asked for."""

    def curve(self, site: Site | str | None = None) -> MICurve:
        """The curve at ``site`` (default: the first site asked for, the last block by default)."""
        if site is None:
            return next(iter(self.curves.values()))
        key = site if isinstance(site, Site) else Site.parse(site)
        if key not in self.curves:
            raise ThinklensError.of("site", str(key), f"one of {[str(s) for s in self.curves]}",
                                    "score that site in mi_trajectories(sites=...)")
        return self.curves[key]

    def with_peaks(self, peaks: Peaks) -> TokenTrajectory:
        """Tokens and peaks, ready for :func:`thinklens.analyses.mi.thinking_token_enrichment`."""
        return TokenTrajectory.of(self.tokens, peaks)


def golden_answer_vectors(model: HookedModel, solutions: Sequence[str], sites: Sequence[Site | str],
                          *, batch_size: int = 8) -> dict[Site, Float[Tensor, "problem d_model"]]:
    """Last-token state of each site after each solution text, one forward per batch (CPU, float32)."""
    resolved = [model.resolve_site(s) for s in sites]
    out: dict[Site, list[Tensor]] = {s: [] for s in resolved}
    for i in range(0, len(solutions), batch_size):
        batch = model.capture(list(solutions[i:i + batch_size]), resolved, positions="last")
        for s in resolved:
            out[s].append(batch.acts[s][:, 0].float().cpu())  # [batch, d]
    return {s: torch.cat(v) for s, v in out.items()}


def mi_trajectories(
    model: HookedModel,
    prompts: Sequence[str],
    solutions: Sequence[str],
    *,
    sites: Sequence[Site | str] = DEFAULT_SITES,
    max_new_tokens: int = 512,
    estimator: NHSICConfig | str = "reference",
    batch_size: int | None = None,
    stop: Sequence[str] = (),
    progress: bool = False,
    **estimator_options: object,
) -> list[MITrajectory]:
    """Generate greedily for every prompt (no chat template) and score every generated token.

    Args:
        prompts, solutions: one reference solution text per prompt (for h_gt).
        sites: blocks to score (default the last block, as the reference).
        max_new_tokens: 512 in the reference run.
        estimator: a registered name or an NHSICConfig (see :data:`thinklens.analyses.mi.ESTIMATORS`).
        estimator_options: passed to :func:`thinklens.analyses.mi.nhsic_trajectory` (device defaults to the
            model's device, so the estimator runs on the accelerator).
    """
    if len(prompts) != len(solutions):
        raise ThinklensError.of("solutions", f"{len(solutions)} solutions for {len(prompts)} prompts",
                                "one solution text per prompt", "pass them in the same order")
    if not sites:
        raise ThinklensError.of("sites", sites, "at least one site", "use the default resid_post.-1")
    resolved = [model.resolve_site(s) for s in sites]
    bad = [str(s) for s in resolved if s.kind in ("logits",)]
    if bad:
        raise ThinklensError.of("site", bad, "a hidden-state site (resid_post.L, ...)", "drop the logits site")
    gold = golden_answer_vectors(model, solutions, resolved)
    traces = model.generate(list(prompts), max_new_tokens=max_new_tokens, capture=resolved,
                            batch_size=batch_size, stop=stop, progress=progress)
    return score_traces(traces, solutions, gold, estimator, **{"device": model.device, **estimator_options})


def score_traces(traces: Sequence[Trace], solutions: Sequence[str], gold: dict[Site, Tensor],
                 estimator: NHSICConfig | str = "reference", **estimator_options: object) -> list[MITrajectory]:
    """MI curves of already generated traces against golden vectors (``gold[site][i]`` for trace i),
    at every site present in both."""
    out = []
    for i, tr in enumerate(traces):
        curves = {s: nhsic_trajectory(tr.hidden[s].float(), g[i], estimator, **estimator_options)  # type: ignore[arg-type]
                  for s, g in gold.items() if s in tr.hidden}
        out.append(MITrajectory(prompt=tr.prompt, solution=solutions[i], token_ids=tuple(tr.token_ids),
                                tokens=tuple(tr.tokens), text=tr.text, stop_reason=tr.stop_reason, curves=curves))
    return out
