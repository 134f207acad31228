"""Per-chunk kernels and solvers behind :func:`thinklens.analyses.mi.nhsic_trajectory` (internal).

Notation: a chunk holds b steps of m coordinates; E = K - 1 = expm1(-(x_i - x_j)^2 / 2 sigma^2) is
the Gaussian kernel minus one (float64: exact small entries, and centring removes the constant
anyway because H 1 = 0); S = H E H = H K H; A = S + c I with c = eps * m; the answer side is
F_y = W W^T (W: [m, r], float64). The score is sum(Z * S W) with Z = A^-1 W.

Both solvers return the score plus the first-order correction of their residual R = W - A Z:
    score = sum(Z * SW) + sum(R * (W - c Z)) - c tr(R^T A^-1 R),
and since A >= c I the dropped last term lies in [0, |R|_F^2]. That |R|_F^2 is reported per step
as a certified bound on the solver error (float64 rounding aside).

Example:
    >>> import torch
    >>> e = kernel_minus_one(torch.tensor([[0.0, 50.0]], dtype=torch.float64), torch.tensor([50.0], dtype=torch.float64))
    >>> round(float(e[0, 0, 1]), 6)  # exp(-1/2) - 1
    -0.393469
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor


def median_sigma(v: Float[Tensor, "batch m"]) -> Float[Tensor, " batch"]:
    """Median of |v_i - v_j| over pairs i < j, per row; mean if that is 0; 1.0 for a constant row.

    The full |v_i - v_j| matrix holds m zeros and every pair twice, so the k-th smallest pair
    distance is its (m + 2k)-th smallest entry: no index tensor of m^2/2 pairs is needed.

    Example:
        >>> median_sigma(torch.tensor([[0.0, 1.0, 3.0]])).tolist()  # pairs 1, 3, 2
        [2.0]
    """
    b, m = v.shape
    d = (v[:, :, None] - v[:, None, :]).abs_().reshape(b, m * m)
    n = m * (m - 1) // 2
    med = torch.kthvalue(d, m + 2 * ((n + 1) // 2), dim=1).values
    if n % 2 == 0:  # even count: mean of the two middle values, as numpy.median does
        med = (med + torch.kthvalue(d, m + 2 * (n // 2 + 1), dim=1).values) / 2
    mean = d.sum(1) / (2 * n)
    sigma = torch.where(med > 0, med, mean)
    return torch.where(sigma > 0, sigma, torch.ones_like(sigma))


def kernel_minus_one(v: Float[Tensor, "batch m"], sigma: Float[Tensor, " batch"],
                     out: Tensor | None = None) -> Float[Tensor, "batch m m"]:
    """E = K - 1 per row, built in place; pass ``out`` to reuse a buffer (fresh multi-MB CPU
    allocations page-fault on every chunk and cost as much as the arithmetic)."""
    a = v * (0.5**0.5 / sigma)[:, None]  # so that K_ij = exp(-(a_i - a_j)^2)
    e = torch.sub(a[:, :, None], a[:, None, :], out=out)  # [batch, m, m]
    return e.square_().neg_().expm1_()


def center_(e: Float[Tensor, "batch m m"]) -> Float[Tensor, "batch m m"]:
    """H E H in place (E symmetric, so column means are the transposed row means)."""
    row = e.mean(2, keepdim=True)  # [batch, m, 1]
    return e.sub_(row).sub_(row.mT).add_(row.mean(1, keepdim=True))


def s_mul(e: Float[Tensor, "batch m m"], v: Float[Tensor, "*shared m k"]) -> Float[Tensor, "batch m k"]:
    """S V = H (E (H V)) without forming S: centring costs O(m k) instead of passes over m^2.
    A V shared by all rows ([m, k]) goes through one tall GEMM instead of b small ones."""
    hv = v - v.mean(-2, keepdim=True)
    b, m, _ = e.shape
    out = (e.reshape(b * m, m) @ hv).reshape(b, m, -1) if hv.ndim == 2 else e @ hv
    return out - out.mean(-2, keepdim=True)


def answer_factor(
    s: Float[Tensor, "m m"], c: float, rank_tol: float, *, sketch: int = 64, tol: float = 1e-9, seed: int = 0,
) -> tuple[Float[Tensor, "m r"], float]:
    """W with F_y = S (S + cI)^-1 ~= W W^T for the answer's centred kernel S (float64), and a
    certified bound on |nHSIC error| that the approximation can cause at any step.

    A full eigendecomposition costs seconds at m = 4096; the spectrum decays so fast that a
    randomised subspace (two power iterations, Rayleigh-Ritz) of a few dozen directions is exact
    to rounding. With P = Q Q^T the projector on the subspace and S^ = P S P:
    |tr(F_x (F_y - F^_y))| <= |F_y - F^_y|_* <= |S - S^|_* / c
    <= (tr S - tr(Q^T S Q) + 2 sqrt(k) |S Q - Q T|_F) / c, plus the weight of dropped Ritz
    directions. The subspace doubles until that bound is below tol * tr(F^_y) (at k = m it is exact).
    """
    m = s.shape[0]
    g = torch.Generator(device="cpu").manual_seed(seed)
    k = min(sketch, m)
    while True:
        q = torch.linalg.qr(s @ torch.randn(m, k, generator=g, dtype=s.dtype).to(s.device))[0]  # [m, k]
        for _ in range(2):
            q = torch.linalg.qr(s @ q)[0]
        sq = s @ q
        t = q.mT @ sq
        t = (t + t.mT) / 2
        lam, vec = torch.linalg.eigh(t)
        lam = lam.clamp_min(0.0)  # S is PSD; tiny negative Ritz values are rounding
        f = lam / (lam + c)
        keep = f > rank_tol
        tail = float((s.trace() - t.trace()).clamp_min(0.0))
        bound = (tail + 2 * k**0.5 * float((sq - q @ t).norm())) / c + float(f[~keep].sum())
        if bound <= tol * float(f.sum()) or k == m:
            return (q @ vec[:, keep]) * f[keep].sqrt(), bound
        k = min(2 * k, m)


def _nystrom(y: Tensor, omega: Tensor) -> tuple[Tensor, Tensor]:
    """Rank-k Nystrom eigenpairs (U [b, m, k], lam [b, k]) of S from the sketch Y = S Omega (stable
    shifted form of Tropp et al. 2017). Rows whose small Cholesky fails get U = 0, i.e. no
    preconditioning for them (CG still converges, only slower)."""
    m = y.shape[-2]
    nu = torch.finfo(y.dtype).eps * m**0.5 * y.norm(dim=(1, 2)) + torch.finfo(y.dtype).tiny ** 0.5  # [b]
    yn = y + nu[:, None, None] * omega
    core = omega.mT @ yn  # [b, k, k]
    chol, info = torch.linalg.cholesky_ex((core + core.mT) / 2)
    bmat = torch.linalg.solve_triangular(chol, yn.mT, upper=False).mT  # [b, m, k]
    u, sv, _ = torch.linalg.svd(bmat, full_matrices=False)
    lam = (sv.square() - nu[:, None]).clamp_min(0.0)
    bad = info != 0
    if bool(bad.any()):
        u[bad] = 0.0
        lam[bad] = 0.0
    return u, lam


def sketch_matrix(m: int, k: int, device: torch.device, seed: int = 0) -> Float[Tensor, "m k"]:
    """A seeded random m x k matrix with orthonormal columns (float64), shared by all steps."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.linalg.qr(torch.randn(m, min(k, m), generator=g, dtype=torch.float64))[0].to(device)


def nystrom_pcg_scores(
    e: Float[Tensor, "batch m m"], w: Float[Tensor, "m r"], c: float, omega: Float[Tensor, "m k"], *,
    rtol: float, max_iter: int,
) -> tuple[Tensor, Tensor, Tensor]:
    """Scores via conjugate gradients on A Z = W, preconditioned by a rank-k Nystrom (k: the columns
    of ``omega``) approximation of S (Frangella, Tropp, Udell 2023). The spectrum of a Gaussian kernel of 1-D
    data decays fast, so a few dozen directions leave A's preconditioned condition number near 1
    and CG stops after one or two steps. Every product with E is float64, so the certificate
    |R|^2 <= rtol |score| (+ a tiny absolute floor) is met to float64 precision. Cost per step:
    O(m^2 (sketch + iterations * r)) instead of O(m^3).

    Returns (scores [b], residual bounds [b], converged [b] bool).
    """
    b = e.shape[0]
    r = w.shape[1]
    # One pass over E gives S W (for the score) and the sketch S Omega. A float32 sketch would need
    # a float32 copy of E: one more pass, slower on CPU and GPU alike.
    prod = s_mul(e, torch.cat([w, omega], dim=1))  # [b, m, r + k]
    sw, y = prod[..., :r], prod[..., r:]
    u, lam = _nystrom(y, omega)
    # P^-1 = (lam_k + c) U (Lam + c)^-1 U^T + (I - U U^T), written as I + U diag(scale) U^T.
    scale = ((lam[:, -1:] + c) / (lam + c) - 1.0)[:, :, None]  # [b, k, 1]

    def precondition(v: Tensor) -> Tensor:
        return v + u @ (scale * (u.mT @ v))

    wb = w.expand(b, -1, -1)
    floor = 1e-14 * float(w.square().sum())  # absolute floor: scores are at most tr F_y = |W|^2
    z = torch.zeros_like(wb)
    res = wb.clone()
    pres = precondition(res)
    p = pres
    rho = (res * pres).sum(1, keepdim=True)  # [b, 1, r]
    done = torch.zeros(b, dtype=torch.bool, device=e.device)
    for _ in range(max_iter):
        q = s_mul(e, p) + c * p
        pq = (p * q).sum(1, keepdim=True)
        alpha = torch.where(pq > 0, rho / pq.clamp_min(torch.finfo(pq.dtype).tiny), torch.zeros_like(pq))
        alpha = torch.where(done[:, None, None], torch.zeros_like(alpha), alpha)  # freeze certified rows
        z = z + alpha * p
        res = res - alpha * q
        score = (z * sw).sum((1, 2)) + (res * (wb - c * z)).sum((1, 2))
        done = done | (res.square().sum((1, 2)) <= rtol * score.abs() + floor)
        if bool(done.all()):
            break
        pres = precondition(res)
        rho_new = (res * pres).sum(1, keepdim=True)
        beta = torch.where(rho > 0, rho_new / rho.clamp_min(torch.finfo(rho.dtype).tiny), torch.zeros_like(rho))
        p = pres + beta * p
        rho = rho_new
    # The recursive residual drifts from the true one; the certificate uses the true residual.
    res = wb - (s_mul(e, z) + c * z)
    bound = res.square().sum((1, 2))
    score = (z * sw).sum((1, 2)) + (res * (wb - c * z)).sum((1, 2))
    return score, bound, bound <= rtol * score.abs() + floor


def cholesky_scores(
    e: Float[Tensor, "batch m m"], w: Float[Tensor, "m r"], c: float, dtype: torch.dtype,
) -> tuple[Tensor, Tensor, Tensor]:
    """Scores from a dense Cholesky factorisation of A in ``dtype`` (O(m^3 / 3) per step), with the
    float64 first-order residual correction. Overwrites ``e`` with S. Returns (scores, bounds, ok)."""
    b = e.shape[0]
    r = w.shape[1]
    s = center_(e)  # [b, m, m] float64
    a = s.to(dtype, copy=True)  # a copy even in float64: S is still needed below
    a.diagonal(dim1=-2, dim2=-1).add_(c)
    chol, info = torch.linalg.cholesky_ex(a)
    del a
    z = torch.cholesky_solve(w.to(dtype).expand(b, -1, -1), chol).double()  # [b, m, r]
    prod = s @ torch.cat([w.expand_as(z), z], dim=2)  # S W and S Z in one float64 product
    wb = w.expand_as(z)
    res = wb - (prod[..., r:] + c * z)
    score = (z * prod[..., :r]).sum((1, 2)) + (res * (wb - c * z)).sum((1, 2))
    return score, res.square().sum((1, 2)), info == 0
