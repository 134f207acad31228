"""The stage cache (computed once, read back on resume, never half-written) and a trace's JSON round trip."""

import json

import numpy as np
import pytest

from thinklens.errors import ThinklensError
from thinklens.generation.trace import trace_from_json, trace_to_json
from thinklens.runs.folders import RunFolder
from thinklens.runs.stages import StageCache, batch_ranges, batch_seed


class Calls:
    """A compute function that counts its calls (and can fail on one of them)."""

    def __init__(self, value, fail_at: int = -1):
        self.value, self.fail_at, self.n = value, fail_at, 0

    def __call__(self):
        self.n += 1
        if self.n == self.fail_at:
            raise KeyboardInterrupt
        return self.value


def _run(root, config=None):
    return RunFolder.create("stages", config or {"n": 1}, root=root, run_id="r")


def test_items_are_computed_once_and_read_back_after_a_restart(tmp_path):
    arrays = Calls({"X": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.array([1, 0], dtype=np.int64)})
    doc = Calls({"labels": (1, 0), "auroc": float("nan"), "n": np.int64(2)})
    cache = StageCache(_run(tmp_path))
    first = cache.arrays("features.train.0000", arrays), cache.json("labels.train.0000", doc)
    assert first[1] == {"labels": [1, 0], "auroc": None, "n": 2}  # the JSON form, also on the first run
    again = StageCache(_run(tmp_path))  # a new process on the same folder: the same config resumes
    second = again.arrays("features.train.0000", arrays), again.json("labels.train.0000", doc)
    assert arrays.n == doc.n == 1 and again.done("features.train.0000") and again.done("labels.train.0000")
    for k in ("X", "y"):
        np.testing.assert_array_equal(first[0][k], second[0][k])
        assert first[0][k].dtype == second[0][k].dtype
    assert first[1] == second[1]
    assert sorted(p.name for p in (tmp_path / "stages" / "r" / "cache").iterdir()) == [
        "features.train.0000.safetensors", "labels.train.0000.json"]


def test_an_interrupted_item_is_not_done_and_is_computed_again(tmp_path):
    compute = Calls([1, 2, 3], fail_at=1)
    cache = StageCache(_run(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        cache.json("rollouts.test.0001", compute)
    assert not cache.done("rollouts.test.0001") and not list((tmp_path / "stages" / "r").rglob("rollouts*"))
    assert StageCache(_run(tmp_path)).json("rollouts.test.0001", compute) == [1, 2, 3] and compute.n == 2


def test_a_done_item_whose_file_vanished_is_recomputed(tmp_path):
    compute = Calls({"a": 1})
    cache = StageCache(_run(tmp_path))
    cache.json("x", compute)
    (tmp_path / "stages" / "r" / "cache" / "x.json").unlink()
    assert StageCache(_run(tmp_path)).json("x", compute) == {"a": 1} and compute.n == 2


def test_finish_marks_items_that_write_their_own_files(tmp_path):
    cache = StageCache(_run(tmp_path))
    cache.finish("probe")
    assert StageCache(_run(tmp_path)).done("probe") and not StageCache(_run(tmp_path)).done("other")


@pytest.mark.parametrize("item", ["../escape", "a/b", "", ".."])
def test_item_names_are_plain(tmp_path, item):
    with pytest.raises(ThinklensError, match="stage item"):
        StageCache(_run(tmp_path)).json(item, lambda: 1)


def test_batch_ranges_and_seeds():
    assert batch_ranges(0, 3) == [] and batch_ranges(3, 3) == [range(0, 3)]
    assert [list(r) for r in batch_ranges(7, 3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ThinklensError, match="batch size"):
        batch_ranges(5, 0)
    seeds = {batch_seed(0, split, k) for split in range(3) for k in range(10)}
    assert len(seeds) == 30 and all(0 <= s < 2**31 for s in seeds)
    assert batch_seed(3, 1) == batch_seed(3, 1) != batch_seed(4, 1)


def test_a_generated_trace_round_trips_through_json(tiny_models, tmp_path):
    model = tiny_models["llama"]
    traces = model.generate(["w1 w2 w3", "w4"], max_new_tokens=5, do_sample=True, seed=3, capture=["resid_post.0"])
    cache = StageCache(_run(tmp_path))
    stored = cache.json("rollouts.0000", lambda: [trace_to_json(t) for t in traces])
    back = [trace_from_json(d) for d in json.loads(json.dumps(stored))]
    for t, b in zip(traces, back):
        assert (b.prompt, b.prompt_ids, b.token_ids, b.tokens, b.text, b.stop_reason) == \
            (t.prompt, list(t.prompt_ids), list(t.token_ids), list(t.tokens), t.text, t.stop_reason)
        assert b.full_text == t.full_text and len(b) == len(t)
        assert b.hidden == {} and b.entropy is None  # token level only: the states are not kept
        assert all(type(i) is int for i in b.token_ids + b.prompt_ids)
    again = [trace_from_json(d) for d in StageCache(_run(tmp_path)).json("rollouts.0000", lambda: [])]
    assert again == back

