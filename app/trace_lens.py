"""What the trace viewer computes with the model, on demand: the logit lens of a trace (every layer's top tokens per
position), the SAE feature activations per token, and the SAEs a trace can be read with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.run_refs import run_kind
from thinklens.errors import ThinklensError
from thinklens.runs.folders import discover_runs
from thinklens.runs.run_views import TraceData, read_result_json

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


@dataclass(frozen=True)
class Lens:
    """The logit lens of a trace: per position and layer the top-k next tokens, and the next-token entropy."""

    layers: list[int]
    top: list[list[list[tuple[str, float]]]]
    """[position][layer] -> k (token, probability); position t: the state that produced token t."""
    entropy: list[float]
    """Next-token entropy (nats) of the final distribution per position."""
    p_token: list[list[float]]
    """[position][layer] the probability each layer gives to the token actually generated there."""


def prompt_ids_of(model: "HookedModel", trace: TraceData) -> list[int]:
    """The prompt's ids as the job fed them (stored, else the model's own tokenisation of the prompt)."""
    if trace.prompt_ids:
        return list(trace.prompt_ids)
    return model.tokenize(trace.prompt)["input_ids"][0].tolist()


def logit_lens(model: "HookedModel", prompt_ids: list[int], token_ids: list[int], k: int = 5) -> Lens:
    """Every block output of ``prompt_ids + token_ids`` read through the final norm and the LM head.

    Args:
        prompt_ids: the prompt, [P] ids.
        token_ids: the generated tokens, [T] ids; position t reads sequence index P - 1 + t.
        k: tokens kept per position and layer.
    """
    import torch

    from thinklens.engine.sites import Site

    if not prompt_ids or not token_ids:
        raise ThinklensError.of("trace ids", f"{len(prompt_ids)} prompt and {len(token_ids)} generated ids",
                                "a prompt and at least one generated token", "pick a trace with generated tokens")
    layers = list(range(model.n_layers))
    sites = [Site("resid_post", i) for i in layers]
    P, T = len(prompt_ids), len(token_ids)
    with torch.no_grad():
        batch = model.capture([list(prompt_ids) + list(token_ids)], sites)
        top: list[list[list[tuple[str, float]]]] = [[] for _ in range(T)]
        p_token: list[list[float]] = [[] for _ in range(T)]
        entropy: list[float] = []
        ids = torch.tensor(list(token_ids))
        for li, s in enumerate(sites):
            h = batch[s][0, P - 1:P - 1 + T]  # [T, d]
            logp = torch.log_softmax(model.unembed(h).float(), -1)  # [T, vocab]
            p, idx = logp.exp().topk(min(k, logp.shape[-1]), -1)
            p_gen = logp[torch.arange(T), ids].exp().tolist()  # [T]
            for t in range(T):
                top[t].append([(model.tokenizer.decode([int(j)]), float(v)) for j, v in zip(idx[t], p[t])])
                p_token[t].append(p_gen[t])
            if li == len(sites) - 1:
                entropy = (-(logp.exp() * logp).sum(-1)).tolist()
    return Lens(layers=layers, top=top, entropy=entropy, p_token=p_token)


def sae_activations(model: "HookedModel", sae: Any, prompt_ids: list[int], token_ids: list[int]) -> Any:
    """SAE feature activations per generated token, ``[T, feature]`` float32 (row t: the state that produced
    token t), at the site the SAE reads."""
    from thinklens.steering.features import encode
    from thinklens.steering.sae import check_sae

    site = check_sae(model, sae)
    P, T = len(prompt_ids), len(token_ids)
    batch = model.capture([list(prompt_ids) + list(token_ids)], [site])
    return encode(sae, batch[site][0, P - 1:P - 1 + T])


def saes_for(root: Path, model: str | None, run: str | None = None) -> list[tuple[str, str]]:
    """``(label, folder)`` of the SAEs trained on ``model``: a steer run's own ``--sae`` first, then the finished
    ``sae`` runs of that model, newest first."""
    out: list[tuple[str, str]] = []
    if run and run_kind(run) == "steer":
        cfg_path = Path(root) / run / "config.json"
        sae = (read_result_json(cfg_path).get("sae") if cfg_path.is_file() else None) or ""
        if sae:
            out.append((f"the steer run's SAE ({sae})", sae))
    for e in discover_runs(root, "sae"):
        if e.error is None and e.status == "done" and (e.config or {}).get("model") == model:
            out.append((f"sae run {e.run_id} ({(e.config or {}).get('site')})", str(e.path)))
    return out
