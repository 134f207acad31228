"""Capture through nnsight: the path for remote (NDIF) models, cross-checked against our hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import Tensor

from thinklens.errors import ThinklensError
from thinklens.sites import Site

if TYPE_CHECKING:
    from thinklens.model import HookedModel


def _envoy(root: Any, path: str) -> Any:
    node = root
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


def capture_with_nnsight(model: "HookedModel", enc: dict[str, Tensor], sites: list[Site], *, remote: bool = False) -> dict[Site, Tensor]:
    """Save the activations at ``sites`` inside one ``LanguageModel.trace`` (remote if asked)."""
    lm = model.to_nnsight()
    order = {s: i for i, s in enumerate(model.sites)}
    sites = sorted(sites, key=order.__getitem__)  # nnsight requires forward order
    saved: list[Any] = []  # nnsight 0.8: locals created inside a trace body do not propagate out
    position_ids = model.position_ids(enc["attention_mask"])
    try:
        with lm.trace({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "position_ids": position_ids},
                      remote=remote):
            for site in sites:
                path, where = model.adapter.module_path(site)
                env = _envoy(lm, path)
                if where == "input":
                    saved.append(env.input.save())
                elif site.kind == "attn_out":
                    saved.append(env.output[0].save())
                else:
                    saved.append(env.output.save())
    except ThinklensError:
        raise
    except Exception as e:  # noqa: BLE001 - connection errors surface as many types
        if remote:
            raise ThinklensError.of("remote execution", model.name, "a reachable NDIF server and an API key",
                                    f"check your network and NDIF key ({type(e).__name__}: {str(e)[:120]})") from None
        raise
    out = {}
    for site, val in zip(sites, saved):
        val = getattr(val, "value", val)
        out[site] = (val[0] if isinstance(val, tuple) else val).detach()
    return out
