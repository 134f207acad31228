"""One task pipeline in the core (#24 item 1): ProblemSet.synthetic, DataOptions.problems, PromptFormat.render_problems,
new_token_budget and find_words reproduce, byte for byte, what each call site they replaced produced.

The oracle is tests/fixtures/task_pipeline_golden.json, written before the refactor by the old call sites themselves
(probes/jobs/probe.py task_problems, probes/lynx_splits.py task_problems, steering/problems.py zoo_stream,
analyses/mi/inputs.py stream_problems, problemsets.synthetic_problems; probes/rollouts.py problem_prompts,
steering/problems.py render, analyses/mi/inputs.py prompt_of, latent/examples.py render_problem;
probes/rollouts.py rollout_budget, steering/problems.py new_token_budget), so committed records and summaries
drawn from these problems, prompts and budgets do not change.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from thinklens.data.formats import PromptFormat
from thinklens.data.problemsets import DataOptions, ProblemSet, RealProblem, load_problems
from thinklens.errors import ThinklensError

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests" / "fixtures" / "task_pipeline_golden.json").read_text())
CASES = [(0, 1, 4, 10), (7, 2, 5, 12)]
FORMATS = ("think", "cot", "direct", "plain")


def rows(problems) -> list:
    """The fixture's form of a problem list (every field a record could hold)."""
    return [[p.id, p.question, p.answer, p.solution, dict(p.metadata), p.ground_truth.n_steps if p.ground_truth else None]
            for p in problems]


def golden(key: str) -> dict:
    return GOLDEN["problems"][key]


@pytest.mark.parametrize("seed,lo,hi,n", CASES)
def test_the_probe_jobs_problems_are_the_old_task_stream(seed, lo, hi, n):
    from thinklens.probes.jobs.probe import ProbeJobConfig

    ps = ProbeJobConfig(seed=seed, min_steps=lo, max_steps=hi, n_problems=n).problems()
    old = golden(f"probe/{seed}-{lo}-{hi}-{n}")
    assert (ps.source, rows(ps)) == (old["source"], old["rows"])


@pytest.mark.parametrize("seed,lo,hi,n", CASES)
def test_lynx_splits_are_the_old_per_split_streams(seed, lo, hi, n):
    from thinklens.probes.jobs.lynx import LynxJobConfig
    from thinklens.probes.lynx_splits import split_problem_sets

    cfg = LynxJobConfig(seed=seed, min_steps=lo, max_steps=hi, n_train=n, n_calibration=n + 1, n_test=n + 2)
    sets = split_problem_sets(cfg)
    for split, ps in sets.items():
        old = golden(f"lynx/{split}/{seed}-{lo}-{hi}-{n}")
        assert (ps.source, rows(ps)) == (old["source"], old["rows"]), split


@pytest.mark.parametrize("seed,lo,hi,n", CASES)
def test_mi_peaks_problems_are_the_old_stream(seed, lo, hi, n):
    from thinklens.analyses.jobs.mi_peaks import MIPeaksJobConfig

    cfg = MIPeaksJobConfig(seed=seed, min_steps=lo, max_steps=hi, n_problems=n)
    ps = cfg.problems(cfg.n_problems, seed=cfg.seed)
    old = golden(f"mi/{seed}-{lo}-{hi}-{n}")
    assert (ps.source, rows(ps)) == (old["source"], old["rows"])


@pytest.mark.parametrize("seed,lo,hi,n", CASES)
def test_the_steering_stream_is_the_old_zoo_stream_but_for_its_ids(seed, lo, hi, n):
    ps = ProblemSet.synthetic(n, seed=30_000 + seed, min_steps=lo, max_steps=hi)
    old = golden(f"steering/{30_000 + seed}-{lo}-{hi}-{n}")["rows"]
    # steering never records a problem id (its parts are drawn by question): the ids are the core's now
    assert [r[1:] for r in rows(ps)] == [r[1:] for r in old]
    assert [p.id for p in ps] == [f"synthetic-{30_000 + seed}-{i}" for i in range(n)]


@pytest.mark.parametrize("seed,lo,hi,n", CASES)
def test_synthetic_sources_are_the_old_per_step_streams(seed, lo, hi, n):
    ps = load_problems(f"synthetic:{lo}-{hi}:{n}", seed=None if seed == 0 else seed)
    old = golden(f"synthetic/{seed}-{lo}-{hi}-{n}")
    assert (ps.source, rows(ps)) == (old["source"], old["rows"])


def test_a_seed_sequence_is_an_independent_stream_and_a_bad_request_is_refused():
    a = ProblemSet.synthetic(20, seed=(3, 0), min_steps=1, max_steps=4)
    b = ProblemSet.synthetic(20, seed=(3, 1), min_steps=1, max_steps=4)
    assert a.questions != b.questions and a.questions == ProblemSet.synthetic(20, seed=(3, 0), min_steps=1, max_steps=4).questions
    assert {p.metadata["n_steps"] for p in a} <= {1, 2, 3, 4}
    with pytest.raises(ThinklensError, match="steps range"):
        ProblemSet.synthetic(2, seed=0, min_steps=3, max_steps=2)
    with pytest.raises(ThinklensError, match="number of synthetic problems"):
        ProblemSet.synthetic(-1, seed=0, min_steps=1, max_steps=2)
    with pytest.raises(ThinklensError, match="per-step streams"):
        ProblemSet.synthetic(2, seed=(1, 2), min_steps=1, max_steps=2, per_steps=True)


def test_data_options_problems_take_the_first_n_or_a_seeded_sample_of_a_data_set():
    from dataclasses import dataclass

    from thinklens.tasks.config import StepRange

    @dataclass(frozen=True)
    class Job(DataOptions, StepRange):
        pass

    job = Job(data="synthetic:1-2:10")
    every = load_problems("synthetic:1-2:10")
    assert rows(job.problems(5, seed=0)) == rows(every.take(5))
    sample = job.problems(5, seed=0, sample_seed=3, part="probe")
    assert sample.source == "synthetic:1-2:10#probe"
    assert rows(sample) == rows(every.split({"probe": 5}, seed=3)["probe"])
    assert len(job.problems(50, seed=0, sample_seed=3)) == 20  # all of it when it has fewer

    @dataclass(frozen=True)
    class NoSteps(DataOptions):
        pass

    with pytest.raises(ThinklensError, match="min_steps"):
        NoSteps(data="").problems(3, seed=0)


@pytest.mark.parametrize("kind", FORMATS)
def test_render_problems_is_every_old_renderer(kind):
    problems = list(ProblemSet.synthetic(3, seed=1, min_steps=1, max_steps=3)) + [
        RealProblem("r0", "What is 2+2?", "4", "2+2=4. #### 4"), RealProblem("r1", "Tom has 3 apples", "7")]
    fmt = PromptFormat(kind)
    new = fmt.render_problems(problems)
    for site in ("probes", "steering", "mi", "latent"):
        assert new == GOLDEN["renders"][f"{site}/{kind}"], site
    assert fmt.render_problems([p.ground_truth for p in problems[:3]]) == GOLDEN["renders"][f"latent-task/{kind}"]
    with pytest.raises(ThinklensError, match="at least one problem"):
        fmt.render_problems([])


class _Tok:
    def __call__(self, texts, add_special_tokens=True):
        return {"input_ids": [[0] * (1 + len(t.split())) for t in texts]}


class _Model:
    """A model whose prompts are one BOS plus a token per word, with a given context."""

    def __init__(self, context):
        self.max_context, self.tokenizer = context, _Tok()

    def tokenize(self, prompts):
        import torch

        lens = [1 + len(p.split()) for p in prompts]
        return {"attention_mask": torch.tensor([[1] * n + [0] * (max(lens) - n) for n in lens])}


PROMPTS = ["a " * 10, "b " * 300, "c " * 50]


@pytest.mark.parametrize("kind", FORMATS)
def test_the_core_budget_is_the_old_steering_and_rollout_budgets(kind):
    from thinklens.generation.budgets import ROLLOUT_TOKENS, budgets_for, new_token_budget, prompt_budgets

    fmt = PromptFormat(kind)
    for key, old in GOLDEN["budgets"].items():
        site, k, ctx, steps, *req = key.split("/")
        if k != kind:
            continue
        context, max_steps = None if ctx == "None" else int(ctx), int(steps)
        try:
            if site == "rollout":
                lengths = [len(ids) for ids in _Tok()(PROMPTS)["input_ids"]]
                new = prompt_budgets(lengths, new_token_budget(fmt, None, max_steps=max_steps, default=ROLLOUT_TOKENS),
                                     context, reserve=9).shared
            else:
                requested = None if req[0] == "None" else int(req[0])
                new = budgets_for(_Model(context), PROMPTS, new_token_budget(fmt, requested, max_steps=max_steps)).shared
        except ThinklensError as e:
            new = type(e).__name__
        assert new == old, key


def test_new_token_budget_refuses_what_it_cannot_size():
    from thinklens.generation.budgets import new_token_budget

    with pytest.raises(ThinklensError, match="max_steps"):
        new_token_budget(PromptFormat("think"), None)
    with pytest.raises(ThinklensError, match="max_new_tokens"):
        new_token_budget(PromptFormat("plain"), 0)


def test_find_words_matches_the_old_cue_matcher_on_hand_built_cases():
    """Oracle: offsets worked out by hand (a word split over tokens, a phrase with two spaces, a word inside a word)."""
    from thinklens.data.words import find_words, word_pattern
    from thinklens.probes.lynx import find_cue_events

    tokens = [" Hmm", ",", " W", "ait", " no", " awaiting", " on", " second  thought", " wait"]
    hits = find_words(tokens, ("wait", "hmm", "on second thought"))
    assert [(h.start_index, h.end_index, h.word) for h in hits] == [
        (0, 0, "hmm"), (2, 3, "wait"), (6, 7, "on second  thought"), (8, 8, "wait")]
    events = find_cue_events(tokens, cue_words=("wait", "hmm", "on second thought"), max_events=2)
    assert [(e.start_index, e.token_index, e.cue) for e in events] == [(0, 0, "hmm"), (2, 3, "wait")]
    assert find_words(["so", "wait"], "wait") == [] and len(find_words(["so", "wait"], "wait", separator=" ")) == 1
    assert [m.group(0) for m in word_pattern("wait").finditer("Wait. awaiting waits wait!")] == ["Wait", "wait"]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


ZOO_CORE = ("thinklens.zoo", "thinklens.zoo.registry", "thinklens.zoo.modeling", "thinklens.zoo.tokenizer")
"""The zoo modules every capability may use: finding, loading and building zoo models (not training them)."""


def test_steering_imports_neither_probes_nor_the_zoo_trainers():
    """steering/ uses the core (the zoo's names, folders and models included), never thinklens.probes or the
    zoo's recipes, trainers and GRPO."""
    bad = {f"{path.relative_to(ROOT)}: {name}" for path in sorted((ROOT / "steering").rglob("*.py"))
           for name in _imports(path)
           if name.startswith("thinklens.probes") or (name.startswith("thinklens.zoo") and name not in ZOO_CORE)}
    assert not bad, sorted(bad)


def test_the_recheck_count_of_the_hybrid_validation_is_the_zoos():
    """Oracle: thinklens.zoo.overthink.ground_truth's rounds (the count tiny-overthink's reasoning defines), on rendered traces."""
    from thinklens.steering.hybrid_behaviour import rechecks
    from thinklens.tasks import Problem, Step
    from thinklens.zoo.overthink import ground_truth, overthink_reasoning

    p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7),))
    texts = [overthink_reasoning(p, rounds=r) for r in (0, 1, 2)] + [
        "Okay. </think> let me verify", "Okay. Let me verify 7.", "", "let me double-check"]
    assert rechecks(texts) == [ground_truth(t, p).rounds >= 1 for t in texts] == [False, True, True, False, False,
                                                                                  False, True]
