"""A KV cache pre-sized from the generation budget: full-attention layers write into a buffer, no ``torch.cat`` per step.

transformers' dynamic cache grows each layer by ``torch.cat`` at every step, an O(T^2) copy over a trace of T
tokens (at 3,072 new tokens a fifth of the decode time). :meth:`thinklens.generation.kv_batch.Decoder.reserve`
swaps the full-attention layers of a fresh cache for :func:`presized_layer` ones sized for the prompt and its
budget; sliding-window, linear-attention and a family's own layers keep their own cache (the fallback).

Example:
    >>> from transformers import DynamicCache
    >>> import torch
    >>> cache = DynamicCache()
    >>> cache.layers = [presized_layer(8)]
    >>> k, v = cache.update(torch.ones(1, 2, 3, 4), torch.ones(1, 2, 3, 4), 0)
    >>> k.shape, cache.layers[0].buffer_positions
    (torch.Size([1, 2, 3, 4]), 8)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from transformers.cache_utils import DynamicLayer


class PresizedLayer:
    """Marker base: a full-attention cache layer of this module that writes into a buffer sized ahead
    (:func:`presized_layer`); its crop is exact, as transformers' own layers' (checked by ``crops_exactly``)."""

    crops_exactly = True


def presized_layer(capacity: int) -> Any:
    """A full-attention KV cache layer (a transformers ``DynamicLayer``) that writes each step's keys and values
    into a buffer of ``capacity`` positions instead of concatenating (``torch.cat`` copies the whole cache at every
    step: O(T^2) over a trace), and returns views of the filled part, so attention reads the positions seen so far
    and no more (transformers' ``StaticCache`` attends over its whole length at every step, which costs most when rows
    stop early). The values are the dynamic cache's, so greedy tokens equal HF ``generate``'s.

    A write past ``capacity`` (a rerun, ``extend``) grows the buffer by doubling, so copies stay O(T) in all.
    With gradients on (a trainer's decoder), the layer concatenates as the dynamic cache does: an in-place write
    into a buffer would change tensors the graph saved.
    """
    return _presized_class()(capacity)


_PRESIZED: list[type] = []


def _presized_class() -> type:
    if _PRESIZED:
        return _PRESIZED[0]

    class PresizedDynamicLayer(PresizedLayer, DynamicLayer):
        def __init__(self, capacity: int):
            super().__init__()
            self.capacity = int(capacity)
            self._kbuf: Tensor | None = None  # [batch, head, capacity, d_head]
            self._vbuf: Tensor | None = None

        def update(self, key_states: Tensor, value_states: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            if torch.is_grad_enabled() and (key_states.requires_grad or value_states.requires_grad):
                self._kbuf = self._vbuf = None  # the graph needs immutable tensors: concatenate from here on
                return super().update(key_states, value_states)
            n = self.get_seq_length()
            need = n + key_states.shape[-2]
            buf = self._kbuf
            if (buf is None or need > buf.shape[2] or buf.shape[0] != key_states.shape[0] or buf.dtype != key_states.dtype
                    or buf.shape[1] != key_states.shape[1] or self.keys.numel() and self.keys.data_ptr() != buf.data_ptr()):
                self._grow(key_states, value_states, n, need)
            self._kbuf[:, :, n:need].copy_(key_states)
            self._vbuf[:, :, n:need].copy_(value_states)
            self.keys, self.values = self._kbuf[:, :, :need], self._vbuf[:, :, :need]  # views: no copy
            return self.keys, self.values

        def _grow(self, key_states: Tensor, value_states: Tensor, n: int, need: int) -> None:
            old = self._kbuf.shape[2] if self._kbuf is not None else 0
            # a full buffer doubles; states set from outside (a row spliced in, columns dropped) move into one as large
            cap = old if need <= old else max(self.capacity, need, 2 * old)
            b, h = key_states.shape[:2]
            kb = key_states.new_empty((b, h, cap, key_states.shape[-1]))  # [batch, head, capacity, d_head]
            vb = value_states.new_empty((b, h, cap, value_states.shape[-1]))
            if n:  # what was cached so far (a view of the old buffer, or a tensor set from outside)
                kb[:, :, :n].copy_(self.keys)
                vb[:, :, :n].copy_(self.values)
            self._kbuf, self._vbuf = kb, vb

        def batch_select_indices(self, indices: Tensor) -> None:
            super().batch_select_indices(indices)  # new tensors; the next update moves them into a fresh buffer
            self._kbuf = self._vbuf = None

        def batch_repeat_interleave(self, repeats: int) -> None:
            super().batch_repeat_interleave(repeats)
            self._kbuf = self._vbuf = None

        def reset(self) -> None:
            self._kbuf = self._vbuf = None
            super().reset()

        @property
        def buffer_positions(self) -> int:
            """Positions the current buffer holds (0: none yet, or concatenating)."""
            return 0 if self._kbuf is None else int(self._kbuf.shape[2])

    PresizedDynamicLayer.__qualname__ = PresizedDynamicLayer.__name__
    _PRESIZED.append(PresizedDynamicLayer)
    return PresizedDynamicLayer


def presize_cache(cache: Any, positions: int) -> int:
    """Swap the empty full-attention layers of a fresh transformers cache (exactly ``DynamicLayer``, or pre-sized
    ones: re-sized) for :func:`presized_layer` ones of ``positions`` positions; other layers (sliding windows, linear attention, a family's
    own) stay as they are. Returns how many layers were swapped (0: the fallback, the dynamic cache as it was)."""
    layers = getattr(cache, "layers", None)
    if not isinstance(layers, list):
        return 0
    swapped = 0
    for i, layer in enumerate(layers):
        if (type(layer) is DynamicLayer or isinstance(layer, PresizedLayer)) and not layer.is_initialized:
            layers[i] = presized_layer(positions)
            swapped += 1
    return swapped
