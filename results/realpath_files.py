"""Write the GSM8K-format files behind ``results/tiny_r1_realpath.json``: ``python results/realpath_files.py DIR``.

tiny-r1's real-path runs read their problems from files, as a user's GSM8K copy would be read: ``question``, and an
``answer`` with ``<<a+b=c>>`` calculations ending in ``#### N``. The four files hold 2-4 step problems from
held-out seeds (none overlaps the zoo's training streams): ``mi.jsonl`` (12 per step count), ``train.jsonl``,
``cal.jsonl`` and ``test.jsonl`` (40 per step count each).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from thinklens.tasks.protocol import gsm8k_record, problems_by_steps

#: file -> (problems per step count, seed); streams ``seed * 1000 + steps``.
FILES = {"mi.jsonl": (12, 60_000), "train.jsonl": (40, 61_000), "cal.jsonl": (40, 62_000), "test.jsonl": (40, 63_000)}


def write_files(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (per_steps, seed) in FILES.items():
        path = folder / name
        path.write_text("".join(json.dumps(gsm8k_record(p)) + "\n" for p in problems_by_steps(per_steps, 2, 4, seed=seed)))
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python results/realpath_files.py DIR")
    for p in write_files(Path(sys.argv[1])):
        print(p)
