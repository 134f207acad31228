"""Shared fixtures; jaxtyping shape checks (beartype) are active for the core under pytest only."""

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from jaxtyping import install_import_hook  # noqa: E402

# The core's layers (not its capability subpackages thinklens.probes etc., nor the zoo's trainers)
CORE_MODULES = ["thinklens.engine", "thinklens.generation", "thinklens.data", "thinklens.tasks", "thinklens.runs",
                "thinklens.calibration", "thinklens.zoo.registry", "thinklens.zoo.modeling", "thinklens.zoo.tokenizer",
                "thinklens.cli", "thinklens.errors", "thinklens.lazy"]
_hook = install_import_hook(CORE_MODULES, "tl_typecheck.typechecker")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    """One saved tiny random model per family: {family: path}."""
    from tools.testing import FAMILIES, build_tiny_model

    root = tmp_path_factory.mktemp("tiny")
    return {fam: build_tiny_model(fam, root / fam) for fam in FAMILIES}


@pytest.fixture(scope="session")
def tiny_models(tiny_dirs):
    from thinklens import HookedModel

    return {fam: HookedModel.load(str(p)) for fam, p in tiny_dirs.items()}


def pytest_collection_modifyitems(config, items):
    """`gpu` tests skip themselves where no accelerator exists (they are deselected by default anyway)."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the marker, not the keyword (tests/gpu/ is one)
            item.add_marker(skip)


# ---- the real-model path: tiny-r1 (or its twin), GSM8K-format files, zoo-only helpers forbidden

#: Helpers only the zoo's own formats use: a job prompting tiny-r1 in its chat format on a data set must not
#: call them.
ZOO_ONLY = (
    "thinklens.tasks.render.render_prompt", "thinklens.tasks.render_prompt", "thinklens.tasks.render.render_target",
    "thinklens.tasks.render_target", "thinklens.tasks.render.render_example", "thinklens.tasks.render_example",
    "thinklens.tasks.spaced", "thinklens.tasks.problem.spaced", "thinklens.tasks.protocol.model_style",
    "thinklens.tasks.protocol.token_budget", "thinklens.steering.corpora.zoo_problems", "thinklens.steering.corpora.zoo_prompts",
    "thinklens.steering.corpora.zoo_texts", "thinklens.zoo.accuracy.evaluate_model",
)


@pytest.fixture(scope="session")
def tiny_r1(tmp_path_factory) -> str:
    """``tiny-r1`` when the zoo has it, else the folder of a small twin: Qwen2, tiny-r1's byte-level BPE tokenizer
    (digits split) and chat template (generation prompt opening ``<think>``), trained by tiny-r1's own trainer for
    150 steps (a few seconds) so it writes sentences ("Okay, so 8 = 8. Then ..."), without a zoo.json (a plain
    Hugging Face folder, as a user's model)."""
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-r1") is not None:
        return "tiny-r1"
    from thinklens.zoo.modeling import ZooModelConfig
    from thinklens.zoo.r1 import build_r1_tokenizer
    from thinklens.zoo.recipes import RECIPES
    from thinklens.zoo.trainer import train_zoo_model, with_overrides

    # lr 3e-3 (the zoo's): in 150 steps it writes sentences; tiny-r1's own 1e-3 suits its long run, not a twin
    recipe = with_overrides(RECIPES["tiny-r1"], vocab_size=400, steps=150, warmup_steps=10, batch_tokens=1024, lr=3e-3,
                            model=ZooModelConfig(d_model=32, n_layers=2, n_heads=2, d_ffn=64, max_positions=512))
    root = tmp_path_factory.mktemp("r1")
    folder = root / "tiny-r1-twin"
    train_zoo_model("tiny-r1", recipe=recipe, out_dir=folder, ckpt_dir=root / "ckpt", progress=False, eval_per_steps=0,
                    tokenizer=build_r1_tokenizer(400, n_problems=200))
    (folder / "zoo.json").unlink()
    return str(folder)


def write_gsm8k(path, per_steps: int, *, seed: int):
    """Synthetic problems (2 and 3 steps, ``per_steps`` each, seed base ``seed``) as GSM8K lines: ``question``,
    and an ``answer`` text with ``<<a+b=c>>`` calculations ending in ``#### N``."""
    import json

    from thinklens.tasks.protocol import gsm8k_record, problems_by_steps

    lines = [json.dumps(gsm8k_record(p)) for p in problems_by_steps(per_steps, 2, 3, seed=seed)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def gsm8k_writer():
    """:func:`write_gsm8k`, for tests that need a second file."""
    return write_gsm8k


@pytest.fixture
def gsm8k_file(tmp_path):
    """Eight held-out problems in GSM8K's test format (``question``, ``answer`` ending ``#### N``)."""
    from thinklens.tasks.protocol import HELD_OUT

    return write_gsm8k(tmp_path / "gsm8k_test.jsonl", 4, seed=HELD_OUT["eval"])


@pytest.fixture
def no_zoo_branch(monkeypatch):
    """Make every zoo-only helper raise, so a job that takes a zoo branch for a real-format model fails."""

    import importlib
    import pkgutil

    from thinklens.runs.jobs import all_jobs

    def forbidden(*args, **kwargs):
        raise AssertionError("a zoo-only branch was taken for a model prompted in its chat format")

    # Import every module of the project first: a module imported for the first time while the patch is on
    # would bind the forbidden function by `from x import y` for the rest of the session.
    all_jobs()
    from thinklens import CAPABILITIES

    for package in ("thinklens", *(f"thinklens.{name}" for name in CAPABILITIES)):
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            importlib.import_module(info.name)
    for target in ZOO_ONLY:
        monkeypatch.setattr(target, forbidden)
    from thinklens.data.problemsets import ProblemSet

    draw = ProblemSet.synthetic.__func__

    def data_source_only(cls, *args, per_steps: bool = False, **kwargs):
        """The synthetic task as a data source (``--data synthetic:MIN-MAX``) is the user's choice; its own stream
        (a job without --data) is the zoo's branch."""
        if not per_steps:
            forbidden()
        return draw(cls, *args, per_steps=per_steps, **kwargs)

    monkeypatch.setattr(ProblemSet, "synthetic", classmethod(data_source_only))


@pytest.fixture(scope="module")
def family_model(tmp_path_factory):
    """``family_model(model_type)``: the loaded tiny random model of that architecture family
    (tools.testing.build_tiny_model), built once per test module."""
    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    root = tmp_path_factory.mktemp("families")
    loaded: dict[str, HookedModel] = {}

    def get(family: str) -> HookedModel:
        if family not in loaded:
            loaded[family] = HookedModel.load(str(build_tiny_model(family, root / family)))
        return loaded[family]

    return get


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Put ``sys.modules['__main__']`` back after every test: Streamlit's script runner (AppTest of a page) can
    leave a page script there, and every later spawn-started process (a Pool worker, a launcher's rank) would
    then run that page as its main module and die at start, which a Pool answers by respawning forever."""
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main
