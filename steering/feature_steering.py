"""Feature steering during generation: add a decoder direction, or clamp a feature keeping the SAE error.

- :func:`add_feature`: ``x + c * W_dec[f]`` at a site (an :class:`~thinklens.engine.interventions.AddVector`).
- :class:`ClampFeature`: set (or scale) feature f and replace the residual by the SAE reconstruction
  *plus the SAE error term*: ``x' = x + decode(z') - decode(z)`` with ``z = encode(x)``. The model's
  own activation is never replaced by the lossy reconstruction, so clamping a feature to its own
  value changes nothing (exactly: both decodes are the same computation on the same input).
- :class:`ScaleFeature`: add ``c`` times the feature's own decoded activation, token by token:
  ``x' = x + c * z_f(x) * |W_dec[f]| * u`` with ``u = unit(W_dec[f])`` for the feature itself (``c = -1`` removes the
  feature where it fires, ``c = 1`` doubles it; nothing is added where it is off), or ``u`` another arm's unit
  direction: that arm then adds, at every token, exactly the norm the feature's own steering adds there.
- :func:`equal_norm_arms`: the chosen feature's direction and its baselines at equal norm (a random
  feature, the top-activating feature, a random direction), for honest comparisons.

Example:
    >>> import torch
    >>> from sae_lens import TopKSAE, TopKSAEConfig
    >>> sae = TopKSAE(TopKSAEConfig(d_in=8, d_sae=16, k=2))
    >>> feature_direction(sae, 3).shape
    torch.Size([8])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import torch
from torch import Tensor

from thinklens.engine.hooks import ForwardContext, SiteFn
from thinklens.engine.interventions import AddVector, Intervention, Positions, ReplaceActivation
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.steering.sae import check_feature, check_sae

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ThinklensError.of(name, value, "a finite number", f"pass e.g. {name}=4.0")
    return float(value)


@torch.no_grad()
def feature_direction(sae: "SAE", feature: int, *, unit: bool = False) -> Tensor:
    """Decoder row ``W_dec[feature]`` as a float32 CPU vector ``[d]`` (unit norm if ``unit``)."""
    f = check_feature(sae, feature)
    v = sae.W_dec[f].detach().float().cpu().clone()
    return v / v.norm().clamp_min(1e-12) if unit else v


def add_feature(site: Site | str, sae: "SAE", feature: int, coeff: float, *, positions: Positions = None,
                unit: bool = False) -> AddVector:
    """``x + coeff * W_dec[feature]`` at ``site`` (``unit=True``: the direction has norm 1 first).

    Example:
        >>> # model.generate(prompts, interventions=[add_feature("resid_post.2", sae, 17, 4.0)])
    """
    coeff = _finite("coeff", coeff)
    site = Site.parse(site) if isinstance(site, str) else site
    return AddVector(site, feature_direction(sae, feature, unit=unit), positions=positions, scale=coeff)


@dataclass(frozen=True)
class ClampFeature(Intervention):
    """Set (``mode="set"``) or scale (``mode="scale"``) SAE feature ``feature`` at ``site``,
    keeping the SAE error term: ``x' = x + decode(z') - decode(z)``.

    Args:
        site: the site the SAE reads.
        sae: an sae-lens SAE whose ``d_in`` is the site's width.
        feature: latent index.
        value: the clamp value (``set``) or factor (``scale``); finite.
        positions: which tokens (see :mod:`thinklens.engine.interventions`).
    """

    site: Site
    sae: "SAE"
    feature: int
    value: float
    mode: Literal["set", "scale"] = "set"
    positions: Positions = None

    def __post_init__(self) -> None:
        _finite("clamp value", self.value)
        if self.mode not in ("set", "scale"):
            raise ThinklensError.of("clamp mode", self.mode, "'set' or 'scale'", "pass mode='set'")
        check_feature(self.sae, self.feature)

    def hooks(self, model: "HookedModel") -> list[tuple[Site, SiteFn]]:
        site = check_sae(model, self.sae, self.site)
        sae, f, value, mode = self.sae, self.feature, float(self.value), self.mode
        dev = next(sae.parameters()).device

        @torch.no_grad()
        def fn(act: Tensor, ctx: ForwardContext) -> Tensor:
            x = act.to(dev, torch.float32)  # [batch, pos, d]
            z = sae.encode(x)  # [batch, pos, feature]
            z2 = z.clone()
            z2[..., f] = value if mode == "set" else z[..., f] * value
            delta = sae.decode(z2) - sae.decode(z)  # the error term x - decode(z) is kept as is
            return act + delta.to(act.device, act.dtype)

        return ReplaceActivation(site, fn, positions=self.positions).hooks(model)


@dataclass(frozen=True)
class ScaleFeature(Intervention):
    """``x + coeff * z_f(x) * |W_dec[feature]| * direction`` at ``site``: steering in units of the feature's own
    activation, where and as much as it fires.

    With ``direction = unit(W_dec[feature])`` (the default) this is ``x + coeff * z_f(x) * W_dec[feature]``: the
    feature's activation scaled by ``1 + coeff`` with the SAE error term kept (``coeff = -1`` ablates it). With another
    unit ``direction`` it adds the same norm at the same tokens along that direction: the equal-norm control of the
    direction, the positions and amounts being the feature's.

    Args:
        site: the site the SAE reads.
        sae: an sae-lens SAE whose ``d_in`` is the site's width.
        feature: the latent whose activation gates the addition.
        coeff: the multiple of the feature's own activation added; finite.
        direction: a unit vector ``[d]`` to add along (None: the feature's own decoder direction).
        positions: which tokens (see :mod:`thinklens.engine.interventions`).
    """

    site: Site
    sae: "SAE"
    feature: int
    coeff: float
    direction: Tensor | None = None
    positions: Positions = None

    def __post_init__(self) -> None:
        _finite("coeff", self.coeff)
        check_feature(self.sae, self.feature)
        if self.direction is not None and tuple(self.direction.shape) != (int(self.sae.cfg.d_in),):
            raise ThinklensError.of("direction", tuple(self.direction.shape), f"a vector of the SAE's width "
                                    f"({int(self.sae.cfg.d_in)},)", "pass a unit direction of the site's width")

    def hooks(self, model: "HookedModel") -> list[tuple[Site, SiteFn]]:
        site = check_sae(model, self.sae, self.site)
        sae, f, coeff = self.sae, self.feature, float(self.coeff)
        dev = next(sae.parameters()).device
        w = sae.W_dec[f].detach().float().to(dev)  # [d]
        u = (w / w.norm().clamp_min(1e-12) if self.direction is None else self.direction.float().to(dev))  # [d]
        w_norm = float(w.norm())

        @torch.no_grad()
        def fn(act: Tensor, ctx: ForwardContext) -> Tensor:
            z = sae.encode(act.to(dev, torch.float32))[..., f]  # [batch, pos]
            delta = (coeff * w_norm * z)[..., None] * u  # [batch, pos, d]; zero where the feature is off
            return act + delta.to(act.device, act.dtype)

        return ReplaceActivation(site, fn, positions=self.positions).hooks(model)


def clamp_feature(site: Site | str, sae: "SAE", feature: int, value: float, *, mode: Literal["set", "scale"] = "set",
                  positions: Positions = None) -> ClampFeature:
    """Build a :class:`ClampFeature` (site given as a string or a Site)."""
    site = Site.parse(site) if isinstance(site, str) else site
    return ClampFeature(site, sae, int(feature), value, mode, positions)


def random_feature(sae: "SAE", exclude: tuple[int, ...], seed: int, alive: Tensor | None = None) -> int:
    """A random feature index (not in ``exclude``; among ``alive`` ones when given), from a local generator."""
    g = torch.Generator().manual_seed(seed)
    pool = torch.arange(int(sae.cfg.d_sae))
    if alive is not None:
        pool = pool[alive.bool()]
    pool = pool[~torch.isin(pool, torch.tensor(list(exclude), dtype=torch.long))]
    if len(pool) == 0:
        raise ThinklensError.of("SAE", "no other live feature", "at least two live features", "train a wider SAE")
    return int(pool[torch.randint(len(pool), (1,), generator=g)])


def equal_norm_arms(sae: "SAE", feature: int, *, top_feature: int | None = None, seed: int = 0,
                    alive: Tensor | None = None) -> dict[str, tuple[Tensor, int | None]]:
    """Unit directions to steer with, all of norm 1: ``{arm: (direction, feature or None)}``.

    Arms: ``feature`` (the chosen one), ``random_feature``, ``top_activating`` (if given and different),
    ``random_direction`` (Gaussian, from a local generator). Multiply by one coefficient for equal norms.
    """
    check_feature(sae, feature)
    rf = random_feature(sae, (feature,) + ((top_feature,) if top_feature is not None else ()), seed, alive)
    arms: dict[str, tuple[Tensor, int | None]] = {
        "feature": (feature_direction(sae, feature, unit=True), feature),
        "random_feature": (feature_direction(sae, rf, unit=True), rf),
    }
    if top_feature is not None and top_feature != feature:
        arms["top_activating"] = (feature_direction(sae, top_feature, unit=True), top_feature)
    g = torch.Generator().manual_seed(seed + 1)
    r = torch.randn(int(sae.cfg.d_in), generator=g)
    arms["random_direction"] = (r / r.norm(), None)
    return arms
