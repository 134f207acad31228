"""The parity self-check every local load runs: our sites against HF ``output_hidden_states``.

One forward on a few tokens captures ``resid_pre.0``, every ``resid_post`` and ``final_norm`` through the
adapter's module paths and compares each with the hidden state HF returns for it
(:func:`thinklens.engine.sites.hidden_state_site`). A wrong path (an adapter guessed from the structure, a family
whose layout changed) is refused with the site, the module, the difference and the fix, instead of giving
silently wrong activations.

Example:
    >>> # check_site_parity(HookedModel(hf, tok))  # raises ThinklensError naming the first site that differs
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from thinklens.engine.hooks import ForwardContext, site_hooks
from thinklens.engine.sites import Site, hidden_state_site
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel

#: Relative tolerance by weight dtype (the captured tensors are HF's own; any wrong path is far off).
_TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-9}
_LOW_PRECISION_TOLERANCE = 1e-2


def _fix(model: "BaseHookedModel") -> str:
    return (f"the module paths came from {model.adapter.source}; pass HookedModel.load(..., adapter=Adapter(...)) "
            "with this model's paths, or thinklens.engine.adapters.register_adapter(model_type, Adapter(...)) "
            "(print(model.hf) shows the modules)")


def check_site_parity(model: "BaseHookedModel", n_tokens: int = 5) -> None:
    """Refuse ``model`` (a ThinklensError) when a site differs from HF ``output_hidden_states``.

    Skipped for remote models and weights on the meta device (nothing to run locally).
    """
    params = list(model.hf.parameters())
    if model.remote or not params or any(p.is_meta for p in params):
        return
    n = model.n_layers
    vocab = model.vocab_size
    ids = torch.tensor([[(3 + 7 * i) % vocab for i in range(n_tokens)]])  # [1, pos] a few ordinary tokens
    pairs = [(hidden_state_site(i, n), i) for i in range(n + 1)]
    if model.adapter.hidden_states == "outputs":  # Mamba: hidden_states[i] is block i's output, the last the final norm's
        pairs = [(Site("resid_post", i), i) for i in range(n)] + [(Site("final_norm"), n)]
    store: dict[Site, Tensor] = {}

    def saver(site: Site):
        def fn(act: Tensor, ctx: ForwardContext) -> None:
            store[site] = act.detach()
        return fn

    with torch.no_grad(), site_hooks(model, [(s, saver(s)) for s, _ in pairs]):
        out = model.forward({"input_ids": ids, "attention_mask": torch.ones_like(ids)}, output_hidden_states=True)
    hidden = getattr(out, "hidden_states", None)
    if hidden is None or len(hidden) != n + 1:
        got = "none" if hidden is None else f"{len(hidden)}"
        raise ThinklensError.of("model layout", f"{got} hidden states from HF for {n} blocks at {model.adapter.layers}",
                                f"{n + 1} (the blocks' inputs and the final norm's output)", _fix(model))
    tol = _TOLERANCE.get(params[0].dtype, _LOW_PRECISION_TOLERANCE)
    for site, index in pairs:
        ref = hidden[index]
        path = model.adapter.module_path(site)[0]
        ours = store.get(site)
        if ours is None or ours.shape != ref.shape:
            got = "nothing (the module never ran)" if ours is None else f"shape {tuple(ours.shape)}"
            raise ThinklensError.of("site parity", f"{site} (module {path}) captured {got}",
                                    f"HF output_hidden_states[{index}] of shape {tuple(ref.shape)}", _fix(model))
        scale = float(ref.float().abs().max())
        diff = float((ours.float() - ref.float()).abs().max())
        if not diff <= tol * (1.0 + scale):
            raise ThinklensError.of(
                "site parity", f"{site} (module {path}) differs from HF output_hidden_states[{index}] by max |diff| "
                f"{diff:.3g} (values up to {scale:.3g})", f"equal within {tol:g} relative", _fix(model))
