"""Save and load probes as safetensors + JSON; never pickle.

A probe folder holds ``probe.safetensors`` (the learned arrays: weights, scaler statistics) and
``probe.json`` (class, params, classes, the site(s) the features came from, ``d_model``, the
feature layout, scikit-learn and format versions). Nothing in either file is executed on load, so
a probe someone else sent can be opened safely (the LYNX reference ships a ``probe.pkl``).

Features of several sites are concatenated in the order given, each ``d_model`` wide; the layout
records this so a probe cannot silently be applied to features of another site or model width.

Example:
    >>> import tempfile, numpy as np
    >>> from thinklens.probes.estimators import LinearProbe
    >>> X = np.random.default_rng(0).normal(size=(40, 6)); y = (X[:, 0] > 0).astype(int)
    >>> probe = LinearProbe().fit(X, y)
    >>> folder = save_probe(probe, tempfile.mkdtemp(), site=["resid_post.1", "resid_post.2"])
    >>> loaded = load_probe(folder, expect_site=["resid_post.1", "resid_post.2"], expect_d_model=3)
    >>> bool(np.array_equal(loaded.predict_proba(X), probe.predict_proba(X)))
    True
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.numpy
import sklearn
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.probes.estimators import PROBES
from thinklens.runs.folders import atomic_write_bytes, atomic_write_json

FORMAT = "thinklens-probe"
FORMAT_VERSION = 1
JSON_NAME = "probe.json"
TENSORS_NAME = "probe.safetensors"

SiteLike = Site | str  # a Site, or a string such as "resid_post.12"


def site_name(site: SiteLike) -> str:
    """The edge string of a site, parsed (did-you-mean on typos) and canonical: ``resid_post.12``."""
    return str(Site.parse(site))


def _site_list(site: SiteLike | Sequence[SiteLike] | None) -> list[str]:
    if site is None:
        return []
    if isinstance(site, str) or not isinstance(site, Sequence):
        return [site_name(site)]
    return [site_name(s) for s in site]


def save_probe(probe: BaseEstimator, folder: str | Path, *, site: SiteLike | Sequence[SiteLike] | None = None,
               model_name: str | None = None) -> Path:
    """Write a fitted probe to ``folder`` (created if needed); returns the folder.

    Args:
        probe: a fitted probe of a class in :data:`thinklens.probes.estimators.PROBES`.
        folder: destination folder; existing probe files there are replaced atomically.
        site: the site its features came from, or a sequence of sites whose features were
            concatenated in that order (each ``d_model`` wide).
        model_name: the model the features came from (zoo name, local dir or hub id).
    """
    name = type(probe).__name__
    if PROBES.get(name) is not type(probe):
        raise ThinklensError.of("probe class", name, f"one of {sorted(PROBES)}",
                                "wrap custom estimators in a registered probe class")
    try:
        check_is_fitted(probe)
    except NotFittedError:
        raise ThinklensError.of("probe", f"an unfitted {name}", "a fitted probe", "call probe.fit(X, y) first") from None
    sites = _site_list(site)
    n_features = int(probe.n_features_in_)
    if sites and n_features % len(sites):
        raise ThinklensError.of(
            "site list", f"{len(sites)} sites {sites} for {n_features} features",
            "a feature count divisible by the number of sites (features concatenated per site)",
            "pass the sites whose activations were concatenated to make X",
        )
    d_model = n_features // len(sites) if sites else n_features
    arrays, meta = probe.export_state()
    tensors = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": name,
        "params": _encode_params(probe.get_params(deep=False), name),
        "state": meta,
        "classes": _encode_classes(getattr(probe, "classes_", None)),
        "n_features_in": n_features,
        "sites": sites,
        "d_model": d_model,
        "feature_layout": {"kind": "concat", "sites": sites, "widths": [d_model] * len(sites)},
        "model_name": model_name,
        "sklearn_version": sklearn.__version__,
        "tensors": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in tensors.items()},
    }
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # tensors first: a probe.json on disk means its tensors are complete
    atomic_write_bytes(folder / TENSORS_NAME, safetensors.numpy.save(tensors))
    atomic_write_json(folder / JSON_NAME, doc)
    return folder


def read_probe_meta(folder: str | Path) -> dict[str, Any]:
    """The parsed ``probe.json`` of a probe folder (for listings; loads no tensors)."""
    path = Path(folder) / JSON_NAME
    if not path.is_file():
        raise ThinklensError.of("probe folder", str(folder), f"a folder holding {JSON_NAME} and {TENSORS_NAME}",
                                "pass a folder written by thinklens.probes.io.save_probe")
    doc = json.loads(path.read_text())
    if doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
        raise ThinklensError.of("probe format", f"{doc.get('format')} v{doc.get('format_version')}",
                                f"{FORMAT} v{FORMAT_VERSION}", "re-save the probe with this thinklens version")
    return doc


def load_probe(folder: str | Path, *, expect_site: SiteLike | Sequence[SiteLike] | None = None,
               expect_d_model: int | None = None) -> BaseEstimator:
    """Load a probe saved by :func:`save_probe`, checking it fits where it will be applied.

    Args:
        folder: the probe folder.
        expect_site: the site (or ordered sites) the caller will take features from; must equal
            the saved ones.
        expect_d_model: the caller's model width; must equal the saved ``d_model``.
    """
    doc = read_probe_meta(folder)
    sites, d_model = doc["sites"], doc["d_model"]
    if expect_site is not None and _site_list(expect_site) != sites:
        raise ThinklensError.of(
            "probe site", f"{folder} was trained on features of {sites or 'an unrecorded site'}",
            f"a probe for {_site_list(expect_site)}",
            f"load a probe trained at {_site_list(expect_site)}, or capture features at {sites}"
            if sites else "re-save the probe with save_probe(..., site=...)",
        )
    if expect_d_model is not None and int(expect_d_model) != d_model:
        raise ThinklensError.of(
            "model width", f"{folder} expects d_model={d_model} (model {doc.get('model_name')!r})",
            f"d_model={expect_d_model} as the caller's model has",
            "use a probe trained on this model, or retrain the probe on its activations",
        )
    cls = PROBES.get(doc["class"])
    if cls is None:
        close = difflib.get_close_matches(doc["class"], list(PROBES), n=1)
        raise ThinklensError.of("probe class", doc["class"], f"one of {sorted(PROBES)}",
                                f"did you mean {close[0]!r}?" if close else "upgrade thinklens")
    tensors_path = Path(folder) / TENSORS_NAME
    if not tensors_path.is_file():
        raise ThinklensError.of("probe folder", str(folder), f"{TENSORS_NAME} next to {JSON_NAME}",
                                "copy the whole probe folder")
    arrays = safetensors.numpy.load_file(str(tensors_path))
    missing = sorted(set(doc["tensors"]) - set(arrays))
    if missing:
        raise ThinklensError.of("probe tensors", f"{tensors_path} lacks {missing}", "every tensor in probe.json",
                                "re-save the probe; the files come from different saves")
    probe = cls(**_decode_params(doc["params"]))
    probe.import_state(arrays, doc["state"])
    probe.n_features_in_ = int(doc["n_features_in"])
    if doc["classes"] is not None:
        probe.classes_ = _decode_classes(doc["classes"])
    return probe


def _encode_params(params: dict[str, Any], name: str) -> dict[str, Any]:
    """JSON for params; tuples and dicts are tagged so that ``get_params`` round-trips exactly."""

    def enc(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, tuple):
            return {"__tuple__": [enc(v) for v in value]}
        if isinstance(value, list):
            return [enc(v) for v in value]
        if isinstance(value, dict):  # keys may be ints (class_weight), which JSON objects cannot keep
            return {"__dict__": [[enc(k), enc(v)] for k, v in value.items()]}
        raise ThinklensError.of(f"{name} parameter", value, "None, bool, number, string, tuple, list or dict",
                                "set plain-valued parameters before saving")

    return {k: enc(v) for k, v in params.items()}


def _decode_params(params: dict[str, Any]) -> dict[str, Any]:
    def dec(value: Any) -> Any:
        if isinstance(value, list):
            return [dec(v) for v in value]
        if isinstance(value, dict) and "__tuple__" in value:
            return tuple(dec(v) for v in value["__tuple__"])
        if isinstance(value, dict) and "__dict__" in value:
            return {dec(k): dec(v) for k, v in value["__dict__"]}
        return value

    return {k: dec(v) for k, v in params.items()}


def _encode_classes(classes: np.ndarray | None) -> dict[str, Any] | None:
    if classes is None:
        return None
    if classes.dtype.kind not in "biufUO":
        raise ThinklensError.of("class labels", classes.dtype, "bool, integer, float or string labels",
                                "encode the labels as integers or strings before fitting")
    return {"dtype": classes.dtype.str, "values": [v.item() if isinstance(v, np.generic) else v
                                                  for v in classes.tolist()]}


def _decode_classes(doc: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(doc["dtype"])
    if dtype.kind == "O":
        out = np.empty(len(doc["values"]), dtype=object)
        out[:] = doc["values"]
        return out
    return np.asarray(doc["values"], dtype=dtype)
