"""LYNX stops its rollouts as soon as the forced-exit labels cannot reach both classes.

A model that never answers correctly gave LYNX 164 s of rollouts (every split's) before the probe refused its class
counts [33, 1]. The splits are now rolled out and labelled one after another, batch by batch, and a split stops when
the rollouts it has left cannot hold enough events of the rarer class.
"""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.errors import ThinklensError


@pytest.fixture(scope="module")
def never_right(tmp_path_factory) -> str:
    """A random zoo-vocabulary model: it writes noise, so no forced exit is ever answered correctly."""
    from thinklens.zoo.modeling import ZooModelConfig, build_model, save_zoo_folder
    from thinklens.zoo.tokenizer import zoo_vocab

    path = tmp_path_factory.mktemp("lynx-stop") / "noise"
    model = build_model(ZooModelConfig(d_model=32, n_layers=2, n_heads=2, d_ffn=64, max_positions=256), len(zoo_vocab()),
                        seed=0)
    save_zoo_folder(model, path, meta={"name": "noise"}, half=False)
    return str(path)


def test_rollouts_stop_when_the_train_labels_cannot_reach_both_classes(never_right, tmp_path, monkeypatch):
    from thinklens.engine.model import HookedModel
    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import run_job

    prompts: list[int] = []
    real = HookedModel.generate

    def counting(self, batch, *a, **k):
        prompts.append(len(batch))
        return real(self, batch, *a, **k)

    monkeypatch.setattr(HookedModel, "generate", counting)
    # one event per train rollout at most, one rollout per batch: after 5 of 6 rollouts without a correct label the one
    # left cannot bring the 2 the probe needs
    with pytest.raises(ThinklensError, match=r"labels of the train split: .*class counts \[5, 0\] after 5 of 6 rollouts"):
        run_job("lynx", model=never_right, prompt_format="think", n_train=6, n_calibration=6, n_test=6, max_steps=1,
                max_new_tokens=16, max_events_train=1, batch_size=1, out=tmp_path / "run", progress=False,
                cue_words=("hmm", "wait", "so", "tom", "ann", "sam", "apples", "pears", "coins"))  # cues it writes
    assert sum(prompts) == 5  # rollouts only (forced exits do not go through generate), of the train split only
    done = RunFolder.open(tmp_path / "run").finished()
    assert not [item for item in done if "calibration" in item or "test" in item]
    assert RunFolder.open(tmp_path / "run").meta()["status"] == "failed"


def test_label_classes_rule():
    from thinklens.probes.lynx_splits import check_label_classes

    check_label_classes("calibration", np.array([40, 3]), 9, 10, 20, 6)  # 3 + 6 events left could still make 9
    with pytest.raises(ThinklensError, match=r"class counts \[40, 3\] after 10 of 20 rollouts \(the 10 left could add at "
                                             r"most 5 events\).*9 events of each class.*too few correct"):
        check_label_classes("calibration", np.array([40, 3]), 9, 10, 20, 5)
    with pytest.raises(ThinklensError, match="too few wrong"):
        check_label_classes("train", np.array([1, 30]), 2, 6, 6, 0)
