"""Rows of a problem set's source: a JSONL/JSON/Parquet/CSV file, a ``save_to_disk`` folder, a folder of
data files (a hub snapshot), or a hub id already in the local Hugging Face cache. Never downloads.

:func:`thinklens.data.problemsets.load_problems` turns the rows into problems; this module only reads.

Example:
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "aime.csv"; _ = f.write_text("Problem,Answer\\nFind x.,204\\n")
    >>> read_rows(str(f))[0]
    [{'Problem': 'Find x.', 'Answer': '204'}]
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError

#: File formats by suffix.
FORMATS: dict[str, str] = {".jsonl": "jsonl", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
#: Split names recognised in data file names and folders (``test-00000-of-00001.parquet``, ``train/``).
SPLIT_NAMES: tuple[str, ...] = ("train", "test", "validation", "valid", "dev", "calibration")
# Files of a datasets folder or hub snapshot that describe data rather than hold it.
_METADATA_FILES = {"dataset_info.json", "dataset_infos.json", "dataset_dict.json", "state.json", "config.json"}
_HUB_ID_RE = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(?::[\w.-]+)?")
_WHAT = "an existing .jsonl/.json/.parquet/.csv file, a datasets folder, a hub id in the local cache, or synthetic:MIN-MAX"


def read_rows(source: str, *, split: str | None = None, cache_dir: str | Path | None = None) -> tuple[list[dict[str, Any]], str]:
    """The rows of a source and a name for it (its path or hub id). ``@split`` at the end picks a split."""
    path = Path(source).expanduser()
    if not path.exists() and "@" in source:
        source, _, at_split = source.rpartition("@")
        split = split or at_split
        path = Path(source).expanduser()
    if path.is_file():
        return read_file(path), str(path)
    if path.is_dir():
        return read_folder(path, split=split), str(path)
    if path.suffix.lower() in FORMATS or not _HUB_ID_RE.fullmatch(source):
        raise ThinklensError.of("data source", source, _WHAT, "check the path")
    repo_id, _, config = source.partition(":")
    return read_folder(cached_snapshot(repo_id, cache_dir), split=split, config=config or None, name=source), source


def cached_snapshot(repo_id: str, cache_dir: str | Path | None = None) -> Path:
    """The folder of a data set repository in the local Hugging Face hub cache (nothing is downloaded)."""
    from huggingface_hub import snapshot_download  # lazy: CLI start-up (huggingface_hub)

    try:
        return Path(snapshot_download(repo_id, repo_type="dataset", local_files_only=True, cache_dir=cache_dir))
    except Exception:  # noqa: BLE001 - every way of not being in the cache gets the same advice
        raise ThinklensError.of(
            "data source", repo_id, "a data set already in the local Hugging Face cache (nothing is downloaded)",
            f"on a machine with network run `hf download --repo-type dataset {repo_id}` (or save_to_disk) and pass "
            "the cache or the folder",
        ) from None


def read_file(path: Path) -> list[dict[str, Any]]:
    """The rows of one data file, by its suffix."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ThinklensError.of("data file format", path.name, f"one of {', '.join(FORMATS)}", "convert the file, e.g. to .jsonl")
    if kind == "parquet":
        import pyarrow.parquet as pq  # lazy: CLI start-up (pyarrow)

        rows = pq.read_table(path).to_pylist()
    elif kind == "csv":
        with path.open(encoding="utf-8-sig", newline="") as fh:
            rows = [dict(row) for row in csv.DictReader(fh)]
    elif kind == "jsonl":
        rows = [row for _, row in json_lines(path)]
    else:
        rows = _read_json(path)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ThinklensError.of(f"row {i} of {path}", type(row).__name__, "an object with named fields", "fix the file")
    return rows


def json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line of a JSON-lines file; a malformed line is an error naming it.

    Example:
        >>> import os, tempfile
        >>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        >>> _ = f.write('{"q": 1}\\n\\n[2]\\n'); f.close()
        >>> list(json_lines(f.name))
        [(1, {'q': 1}), (3, [2])]
        >>> os.unlink(f.name)
    """
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ThinklensError.of(f"line {lineno} of {path}", line.strip()[:60], f"one JSON object per line ({exc.msg})",
                                        f"fix or remove {path}:{lineno}") from None
            yield lineno, value


def _read_json(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ThinklensError.of("JSON file", str(path), f"valid JSON ({exc.msg} at line {exc.lineno})", "fix the file") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        if lists and len(lists) == len(data) and len({len(v) for v in lists.values()}) == 1 and not any(
            isinstance(x, dict) for v in lists.values() for x in v[:1]
        ):
            keys = list(lists)  # columns: {"question": [...], "answer": [...]}
            return [dict(zip(keys, values)) for values in zip(*lists.values())]
        records = [v for v in lists.values() if v and all(isinstance(x, dict) for x in v)]
        if len(records) == 1:
            return records[0]  # {"data": [{...}, ...]} and similar wrappers
    raise ThinklensError.of("JSON file", str(path), "a list of objects, one list of objects under a key, or equal-length columns",
                            "save it as JSON lines (.jsonl), one object per line")


def _split_of(file: Path, root: Path) -> str | None:
    parts = [*file.relative_to(root).parent.parts, file.name]
    for part in reversed(parts):
        m = re.match(rf"({'|'.join(SPLIT_NAMES)})(?:$|[-_.])", part.lower())
        if m:
            return m.group(1)
    return None


def read_folder(folder: Path, *, split: str | None = None, config: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
    """The rows of a ``save_to_disk`` folder (Dataset or DatasetDict) or of a folder of data files."""
    name = name or str(folder)
    if any((folder / f).is_file() for f in ("dataset_dict.json", "state.json")):
        import datasets  # lazy: CLI start-up (datasets)

        loaded = datasets.load_from_disk(str(folder))
        if isinstance(loaded, datasets.DatasetDict):
            loaded = loaded[_choose_split(list(loaded), split, name)]
        return loaded.to_list()
    files = sorted(
        f for f in folder.rglob("*")
        if f.is_file() and f.suffix.lower() in FORMATS and f.name not in _METADATA_FILES
        and not any(p.startswith(".") for p in f.relative_to(folder).parts)
    )
    if config is not None:
        files = [f for f in files if config in f.relative_to(folder).parent.parts or f.stem.startswith(config)]
    if not files:
        raise ThinklensError.of("data folder", name + (f" (config {config})" if config else ""),
                                f"data files ({', '.join(FORMATS)}) or a save_to_disk folder", "check the folder or the config")
    by_split: dict[str | None, list[Path]] = {}
    for f in files:
        by_split.setdefault(_split_of(f, folder), []).append(f)
    chosen = by_split[_choose_split(list(by_split), split, name)] if len(by_split) > 1 or split is not None else files
    configs = {f.relative_to(folder).parent for f in chosen}
    if len(configs) > 1 and config is None:
        options = ", ".join(sorted(str(c) for c in configs))
        raise ThinklensError.of("data folder", name, "one config", f"several hold data ({options}); pick one as ID:config")
    return [row for f in chosen for row in read_file(f)]


def _choose_split(available: list, split: str | None, name: str) -> Any:
    if split is not None:
        if split not in available:
            shown = ", ".join(str(s) for s in available)
            raise ThinklensError.of(f"split of {name}", split, f"one of {shown}", f"pass {name}@<split> with one of them")
        return split
    if len(available) == 1:
        return available[0]
    if "test" in available:
        return "test"
    raise ThinklensError.of(f"split of {name}", None, f"one of {', '.join(str(s) for s in available)}",
                            f"pass {name}@<split> (or split=...)")
