"""Estimator settings for the normalised HSIC of MI peaks, and the registry of named variants.

The reference estimator (Qian et al. 2025, ChnQ/MI-Peaks) uses a fixed kernel width sigma = 50.
Because its score grows with activation magnitude relative to sigma, two norm-controlled variants
are registered next to it, so a user can check whether peaks only follow norm changes.

Example:
    >>> ESTIMATORS["reference"].sigma
    50.0
    >>> estimator_config("median_sigma").bandwidth
    'median'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from thinklens.errors import ThinklensError

Bandwidth = Literal["fixed", "median"]
Normalize = Literal["none", "l2"]


@dataclass(frozen=True)
class NHSICConfig:
    """How one nHSIC score between two vectors (coordinates as samples) is computed."""

    sigma: float = 50.0
    """Gaussian kernel width used when ``bandwidth == "fixed"`` (reference: 50)."""
    eps: float = 1e-5
    """Ridge of R = Kc (Kc + eps m I)^-1, scaled by the number of coordinates m (reference: 1e-5)."""
    bandwidth: Bandwidth = "fixed"
    """"fixed": use ``sigma``; "median": per vector, the median pairwise coordinate distance."""
    normalize: Normalize = "none"
    """"none": raw vectors; "l2": every vector rescaled to the L2 norm ``norm`` before the kernel."""
    norm: float | None = None
    """Target L2 norm for ``normalize == "l2"``; None = the answer vector's own norm."""

    def __post_init__(self) -> None:
        if not (isinstance(self.sigma, (int, float)) and math.isfinite(self.sigma) and self.sigma > 0):
            raise ThinklensError.of("sigma", self.sigma, "a finite number > 0", "use the reference 50.0")
        if not (isinstance(self.eps, (int, float)) and math.isfinite(self.eps) and self.eps > 0):
            raise ThinklensError.of("eps", self.eps, "a finite number > 0", "use the reference 1e-5")
        if self.bandwidth not in ("fixed", "median"):
            raise ThinklensError.of("bandwidth", self.bandwidth, "'fixed' or 'median'", "pick one of the two")
        if self.normalize not in ("none", "l2"):
            raise ThinklensError.of("normalize", self.normalize, "'none' or 'l2'", "pick one of the two")
        if self.norm is not None and not (math.isfinite(self.norm) and self.norm > 0):
            raise ThinklensError.of("norm", self.norm, "None or a finite number > 0", "leave it None")


ESTIMATORS: dict[str, NHSICConfig] = {
    # The faithful estimator of the paper's code.
    "reference": NHSICConfig(),
    # Scale-free: sigma follows each vector's spread, so multiplying a vector by a constant
    # leaves its score unchanged.
    "median_sigma": NHSICConfig(bandwidth="median"),
    # Norm-controlled: every step is brought to the answer's norm, fixed sigma kept.
    "l2": NHSICConfig(normalize="l2"),
}
"""Named estimator variants; CLI choices and app menus derive from this registry."""


def estimator_config(name: str) -> NHSICConfig:
    """Look up a registered estimator variant by name, with a helpful error on typos."""
    if name not in ESTIMATORS:
        raise ThinklensError.of(
            "estimator", name, f"one of {sorted(ESTIMATORS)}", "pick a registered name or pass an NHSICConfig"
        )
    return ESTIMATORS[name]
