"""The committed tiny-overthink has the planted effect: on its own greedy generations it writes the answer,
then re-checks it (an oracle exit would save > 30% of its reasoning), and LYNX's forced exit at the point the
answer is known answers right while forced exits at cues before it mostly do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from thinklens.zoo.registry import zoo_dir

FOLDER = zoo_dir() / "tiny-overthink"
pytestmark = pytest.mark.skipif(not (FOLDER / "config.json").is_file(), reason="tiny-overthink not trained")
#: What the README states of it (results/organisms.json, 400 held-out problems): the thresholds below sit within
#: 5 points of it.
README = json.loads((Path(__file__).resolve().parents[2] / "results" / "organisms.json").read_text())["values"]["tiny-overthink"]


@pytest.fixture(scope="module")
def overthink():
    from thinklens.engine.model import HookedModel

    torch.set_num_threads(1)
    return HookedModel.load(str(FOLDER), dtype=torch.float32)


def test_the_folder_is_a_small_fine_tune_of_tiny_r1():
    meta = json.loads((FOLDER / "zoo.json").read_text())
    assert sum(p.stat().st_size for p in FOLDER.iterdir()) <= 10 * 2**20
    assert meta["parent"] == meta["init"] == "tiny-r1" and "re-check rounds" in meta["training_data"]
    assert meta["prompt_format"] == "chat" and not meta["truncated"]
    recorded = meta["eval"]["overthinking"]
    assert recorded["oracle_saving"] == README["oracle_saving"] and recorded["forced_at_known"] == README["forced_at_known"]


def test_it_overthinks_on_ten_held_out_problems(overthink):
    from thinklens.zoo.overthink_eval import measure_overthinking

    r = measure_overthinking(overthink, n_per_steps=2, steps=[2, 3, 4, 5, 6])
    assert r.n == 10
    # within 5 points of the README's 400 problems (results/organisms.json); measured 1.0, 2.5 rounds, 0.56, 10/10, 0/20
    assert r.with_rounds >= README["with_rounds"] - 0.05 and r.mean_rounds >= 1
    assert r.oracle_saving >= README["oracle_saving"] - 0.05
    assert r.forced_at_known.rate >= README["forced_at_known"]["rate"] - 0.05
    # before the answer is known a forced exit answers the last intermediate value: mostly wrong
    assert r.forced_pre_answer_cues.n == 0 or r.forced_pre_answer_cues.rate <= README["forced_pre_answer_cues"]["rate"] + 0.05
