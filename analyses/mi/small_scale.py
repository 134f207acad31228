"""Why a shuffled answer scores alike: at small activation scale the nHSIC is a squared correlation.

With coordinates as samples, the Gaussian kernel of a vector x whose spread is small next to sigma
(|x_i - x_j| << sigma) is K = 1 - D / (2 sigma^2) + O((x / sigma)^4), D_ij = (x_i - x_j)^2. Centring on
both sides removes the constant and the x_i^2 + x_j^2 parts of D, leaving

    S = H K H ~ xc xc^T / sigma^2          (xc = x - mean(x): rank one, eigenvalue l = |xc|^2 / sigma^2)

so F = S (S + c I)^-1 ~ a u u^T with u = xc / |xc|, a = l / (l + c), c = eps * m, and

    nHSIC(x, y) = trace(F_x F_y) ~ a_x a_y rho(x, y)^2,

rho the Pearson correlation of the two coordinate profiles. At the zoo's scale (|xc| / sigma ~ 0.1-1,
c ~ 1e-3) a_x a_y is ~0.99, so the score is close to rho^2: it measures how alike the two vectors'
coordinate profiles are, whatever the answer. States of one model at one block share a large common
profile, and so do the answer vectors of different problems, which is why another problem's answer
vector scores almost as high as the problem's own. The approximation needs a fixed bandwidth
(sigma = 50 in the reference; the l2 variant too, after rescaling); the median-bandwidth variant sets
sigma to the vector's own spread, where it does not apply.

Example:
    >>> import torch
    >>> from thinklens.analyses.mi.estimator import nhsic_trajectory
    >>> g = torch.Generator().manual_seed(0)
    >>> y = torch.randn(64, generator=g, dtype=torch.float64)
    >>> x = (y + torch.randn(64, generator=g, dtype=torch.float64))[None]  # |x| ~ 1 << sigma = 50
    >>> [round(float(v[0]), 3) for v in (squared_correlation(x, y), small_scale_nhsic(x, y), nhsic_trajectory(x, y).mi)]
    [0.663, 0.643, 0.646]
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from thinklens.analyses.mi.config import NHSICConfig, estimator_config
from thinklens.errors import ThinklensError


def _centred(v: Tensor) -> Tensor:
    v = v.detach().to("cpu", torch.float64)
    return v - v.mean(-1, keepdim=True)


def squared_correlation(states: Float[Tensor, "step d_model"], answer: Float[Tensor, " d_model"]
                        ) -> Float[Tensor, " step"]:
    """rho^2 between each row of ``states`` and ``answer``, their d coordinates as paired samples (float64, CPU).

    A constant row or answer has no correlation: 0.0 (as its nHSIC).

    Example:
        >>> import torch
        >>> squared_correlation(torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [1.0, 1.0, 1.0]]),
        ...                     torch.tensor([2.0, 4.0, 6.0])).round(decimals=6).tolist()
        [1.0, 1.0, 0.0]
    """
    if states.ndim != 2 or answer.ndim != 1 or states.shape[1] != answer.shape[0]:
        raise ThinklensError.of("shapes", (tuple(states.shape), tuple(answer.shape)),
                                "states [step, d_model] and answer [d_model]", "pass one trajectory and its answer")
    xc, yc = _centred(states), _centred(answer)
    nx, ny = xc.norm(dim=1), yc.norm()
    dot = xc @ yc  # [step]
    denom = nx * ny
    return torch.where(denom > 0, (dot / denom.clamp_min(1e-300)) ** 2, torch.zeros_like(dot))


def _prepare_fixed(v: Tensor, cfg: NHSICConfig, target: float) -> Tensor:
    if cfg.normalize == "l2":
        n = v.norm(dim=-1, keepdim=True)
        v = torch.where(n > 0, v * (target / n.clamp_min(1e-300)), v)
    return v


def small_scale_nhsic(states: Float[Tensor, "step d_model"], answer: Float[Tensor, " d_model"],
                      config: NHSICConfig | str = "reference") -> Float[Tensor, " step"]:
    """The leading-order nHSIC at small scale, a_x a_y rho^2 (module docstring), for a fixed-bandwidth estimator.

    Raises for the median-bandwidth variant (its sigma is the vector's own spread: no small parameter).
    """
    cfg = estimator_config(config) if isinstance(config, str) else config
    if cfg.bandwidth != "fixed":
        raise ThinklensError.of("estimator bandwidth", cfg.bandwidth, "fixed (sigma = 50 in the reference)",
                                "use the reference or l2 estimator; the median bandwidth has no small-scale limit")
    rho2 = squared_correlation(states, answer)
    y = answer.detach().to("cpu", torch.float64)
    target = cfg.norm if cfg.norm is not None else float(y.norm())
    x = _prepare_fixed(states.detach().to("cpu", torch.float64), cfg, target)
    y = _prepare_fixed(y, cfg, target)
    c = cfg.eps * answer.shape[0]

    def weight(v: Tensor) -> Tensor:
        lam = _centred(v).square().sum(-1) / cfg.sigma**2  # the one eigenvalue of S ~ vc vc^T / sigma^2
        return lam / (lam + c)

    return weight(x) * weight(y) * rho2


def kernel_scale(states: Float[Tensor, "step d_model"], config: NHSICConfig | str = "reference"
                 ) -> Float[Tensor, " step"]:
    """max_i |x_i - mean(x)| / sigma per row: the expansion parameter (the approximation holds when it is << 1).

    Example:
        >>> import torch
        >>> kernel_scale(torch.tensor([[0.0, 10.0, 20.0]])).tolist()  # max deviation 10 at sigma = 50
        [0.2]
    """
    cfg = estimator_config(config) if isinstance(config, str) else config
    return _centred(states).abs().amax(-1) / cfg.sigma
