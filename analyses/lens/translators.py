"""The logit lens and the tuned lens: a layer's residual state read as a next-token distribution.

The logit lens (nostalgebraist 2020) reads block ``l``'s output ``h`` (``resid_post.l``) through the model's final norm
and unembedding, ``W_U norm(h)`` (:meth:`~thinklens.engine.base.BaseHookedModel.unembed`). The tuned lens (Belrose et
al. 2023, arXiv 2303.08112) first moves ``h`` by an affine translator of its own layer, ``h + A_l h + b_l``, trained so
that the lens matches the model's final output distribution (:func:`thinklens.analyses.lens.lens_training.train_translators`).
``A_l`` and ``b_l`` start at zero, so an untrained tuned lens is the logit lens (Belrose et al.'s identity
initialisation). The last block has no translator: its logit lens is the model's own output.

A tuned lens is saved as a checkpoint folder of the core (:func:`thinklens.engine.training.save_checkpoint`:
``model.safetensors`` and ``state.json``, never a pickle) and loaded by a path, a run, or a model's name
(:func:`load_lens`: the newest finished ``tuned-lens`` run of that model).

Example:
    >>> lens = TunedLens(d_model=4, n_layers=3, model="toy")
    >>> h = torch.randn(2, 4)
    >>> torch.equal(lens.translate(h, 0), h), lens.layers
    (True, (0, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor, nn

from thinklens.engine.training import checkpoint_state, load_checkpoint, save_checkpoint
from thinklens.errors import ThinklensError
from thinklens.runs.folders import discover_runs
from thinklens.runs.listing import find_run

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel

LENS_KIND = "tuned-lens"
"""``state.json``'s kind of a saved tuned lens (and the job's run-folder kind)."""
LENS_FOLDER = "lens"
"""The folder of a ``tuned-lens`` run that holds its lens."""


class TunedLens(nn.Module):
    """Affine translators ``h -> h + A_l h + b_l``, one per block but the last, identity-initialised.

    Args:
        d_model: the residual width.
        n_layers: the model's number of blocks; translators for blocks ``0 .. n_layers - 2``.
        model: the name of the model it was trained on (checked when it is used on another).
    """

    def __init__(self, d_model: int, n_layers: int, *, model: str = ""):
        super().__init__()
        if n_layers < 2 or d_model < 1:
            raise ThinklensError.of("tuned lens shape", (d_model, n_layers), "d_model >= 1 and n_layers >= 2",
                                    "a model with at least two blocks")
        self.d_model, self.n_layers, self.model = int(d_model), int(n_layers), model
        self.weight = nn.Parameter(torch.zeros(n_layers - 1, d_model, d_model))  # [layer, d_out, d_in]: A_l
        self.bias = nn.Parameter(torch.zeros(n_layers - 1, d_model))  # [layer, d]: b_l
        self.record: dict[str, Any] = {}
        """``state.json`` of a loaded lens: how it was trained (empty for a new one)."""

    @property
    def layers(self) -> tuple[int, ...]:
        """The blocks that have a translator."""
        return tuple(range(self.n_layers - 1))

    def _index(self, layer: int) -> int:
        li = layer + self.n_layers if layer < 0 else layer
        if not 0 <= li < self.n_layers:
            raise ThinklensError.of("lens layer", layer, f"a block of the lens's model (0..{self.n_layers - 1})",
                                    "read a block the model has")
        return li

    def translate(self, h: Float[Tensor, "... d"], layer: int) -> Float[Tensor, "... d"]:
        """Block ``layer``'s state moved by its translator (the last block's unchanged)."""
        li = self._index(layer)
        if li == self.n_layers - 1:
            return h
        w, b = self.weight[li], self.bias[li]
        return h + h.to(w.dtype) @ w.T + b  # [..., d]

    def translate_all(self, h: Float[Tensor, "tok layer d"]) -> Float[Tensor, "tok layer d"]:
        """Every block's state ``[tok, n_layers - 1, d]`` (blocks ``0 .. n_layers - 2``) moved by its own translator."""
        return h + torch.einsum("tld,led->tle", h.to(self.weight.dtype), self.weight) + self.bias  # [tok, layer, d]

    def state(self) -> dict[str, Any]:
        """What ``state.json`` records besides the training's own record."""
        return {"kind": LENS_KIND, "model": self.model, "d_model": self.d_model, "n_layers": self.n_layers}

    def save(self, folder: str | Path, **record: Any) -> Path:
        """Write the lens to ``folder`` (safetensors + ``state.json`` with ``record``, e.g. how it was trained)."""
        save_checkpoint(folder, self, None, {**self.state(), **record})
        return Path(folder)

    @classmethod
    def load(cls, folder: str | Path) -> "TunedLens":
        """The lens saved in ``folder`` by :meth:`save`."""
        state = checkpoint_state(folder)
        if state is None or state.get("kind") != LENS_KIND:
            raise ThinklensError.of("tuned lens folder", str(folder), "a folder written by TunedLens.save (state.json of kind "
                                    f"{LENS_KIND!r})", "train one with `thinklens run tuned-lens --model NAME`")
        lens = cls(int(state["d_model"]), int(state["n_layers"]), model=str(state.get("model", "")))
        load_checkpoint(folder, lens)
        lens.record = state
        return lens

    def check_model(self, model: "BaseHookedModel") -> None:
        """Refuse a model whose shape differs from the one the lens was trained on."""
        if (model.d_model, model.n_layers) != (self.d_model, self.n_layers):
            raise ThinklensError.of("model for this tuned lens", f"{model.name} (d_model {model.d_model}, {model.n_layers} blocks)",
                                    f"the shape of {self.model or 'its model'} (d_model {self.d_model}, {self.n_layers} blocks)",
                                    f"load the lens trained on {model.name}, or train one")


def lens_logits(model: "BaseHookedModel", h: Float[Tensor, "... d"], layer: int,
                lens: TunedLens | None = None) -> Float[Tensor, "... vocab"]:
    """Block ``layer``'s state read through a lens: the logit lens (``lens`` None) or the tuned lens.

    Example:
        >>> # logits = lens_logits(model, batch["resid_post.3"], 3, TunedLens.load("runs/tuned-lens/x/lens"))
    """
    if lens is not None:
        h = lens.translate(h, layer)
    return model.unembed(h.to(model.device))


def load_lens(spec: str | Path, *, root: str | Path | None = None) -> TunedLens:
    """A tuned lens by where it is or whose it is: a lens folder (``state.json`` + ``model.safetensors``), a
    ``tuned-lens`` run (its path, ``tuned-lens/<id>`` or its id) or a model's name (the newest finished ``tuned-lens``
    run of that model under ``root``, default ``$THINKLENS_RUNS`` or ``./runs``).

    Example:
        >>> # lens = load_lens("smollm2-135m")          # the newest finished tuned-lens run of SmolLM2-135M
        >>> # lens = load_lens("runs/tuned-lens/demo")  # a run folder
    """

    p = Path(spec).expanduser()
    for folder in (p, p / LENS_FOLDER):
        if (folder / "state.json").is_file():
            return TunedLens.load(folder)
    runs = [e for e in discover_runs(root, LENS_KIND) if e.status == "done" and (e.config or {}).get("model") == str(spec)]
    if runs:  # newest first
        return TunedLens.load(runs[0].path / LENS_FOLDER)
    try:
        entry = find_run(str(spec), root)
    except ThinklensError:
        raise ThinklensError.of("tuned lens", str(spec), "a lens folder, a tuned-lens run, or a model with a finished tuned-lens run",
                                f"train one: `thinklens run tuned-lens --model {spec}`") from None
    return TunedLens.load(entry.path / LENS_FOLDER)


def layer_list(n_layers: int, layers: Sequence[int] | None = None) -> list[int]:
    """Blocks to read (all of them by default), negative indices counted from the end."""
    out = list(range(n_layers)) if layers is None else [li + n_layers if li < 0 else li for li in layers]
    bad = [li for li in out if not 0 <= li < n_layers]
    if bad:
        raise ThinklensError.of("layers", bad, f"blocks 0..{n_layers - 1}", "pick blocks the model has")
    return out
