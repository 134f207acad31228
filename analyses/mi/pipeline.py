"""The stages of ``thinklens run mi-peaks`` (the job itself: :mod:`thinklens.analyses.jobs.mi_peaks`).

Problems -> for the reasoning model and each sibling, traced trajectories scored at every site and by
every estimator, with the shuffled-answer control and peaks -> thinking-token enrichment -> model
comparison -> optional suppression test, Representation Recycling (layer sweep) and thinking-token
test-time scaling on the reasoning model, into one run folder (format: :mod:`thinklens.analyses.mi.run_format`).

Each stage is marked done in the run folder once its files are written, so re-running with the same
config skips finished stages (``trajectories:<model key>``, ``enrichment``, ``comparison``,
``suppression``, ``recycling``, ``ttts``).

The three intervention stages use the same thinking words: ``--thinking-words`` when given, else the
words emitted most often at the reasoning model's MI peaks (``--top-words`` of them), else -- when no
peak token is a word at all -- the paper's thinking words that exist in the model's vocabulary. The
source is recorded with the results.

Example:
    >>> from thinklens.analyses.mi.config import MIPeaksJobConfig
    >>> stage_names(MIPeaksJobConfig(compare=("tiny-cot",), ttts=True))
    ['trajectories:tiny-think', 'trajectories:tiny-cot', 'enrichment', 'comparison', 'ttts']
    >>> choose_thinking_words([{"word": "wait", "peak_count": 4}, {"word": "so", "peak_count": 2}], (), 1)
    (['wait'], 'enrichment')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from thinklens.analyses.mi import mi_findings as fnd
from thinklens.analyses.mi.figures import figure_enrichment
from thinklens.analyses.mi.figures_interventions import figure_suppression, figure_ttts
from thinklens.analyses.mi.figures_runs import controls_table, figure_controls, figure_overlay, figure_rr_sweep, figure_sites, models_table
from thinklens.analyses.mi.inputs import gold_text
from thinklens.analyses.mi.mi_findings import peak_fraction_note
from thinklens.analyses.mi.peaks import PEAK_RULES
from thinklens.analyses.mi.per_model import collect_model
from thinklens.analyses.mi.recycling import default_layer, recycling_eval
from thinklens.analyses.mi.run_format import model_key, read_index, read_trajectory, write_index
from thinklens.analyses.mi.suppression import suppression_test
from thinklens.analyses.mi.thinking_tokens import UNITS, TokenTrajectory, thinking_token_enrichment, word_of
from thinklens.analyses.mi.ttts import ttts_eval
from thinklens.analyses.mi.vocab import decoded_vocab, token_ids_for_words
from thinklens.calibration.findings import findings_doc
from thinklens.data.formats import format_for
from thinklens.errors import ThinklensError
from thinklens.runs.folders import to_jsonable

if TYPE_CHECKING:
    from thinklens.analyses.mi.config import MIPeaksJobConfig
    from thinklens.data.formats import PromptFormat
    from thinklens.data.problemsets import ProblemSet
    from thinklens.engine.model import HookedModel
    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import Shards

INTERVENTIONS = ("suppression", "recycling", "ttts")
"""The optional stages on the reasoning model, in the order they run."""

PAPER_WORDS = ("So", "Let", "Hmm", "I", "The", "Okay", "That", "First", "Now", "Wait", "But", "Then", "Since",
               "Therefore")
"""Top thinking words of R1-Distill-Llama-8B in the paper (the fallback list)."""


def model_keys(cfg: MIPeaksJobConfig) -> list[str]:
    """Folder keys of the job's models, in order (reasoning model first)."""
    keys: list[str] = []
    for name in cfg.models:
        keys.append(model_key(name, set(keys)))
    return keys


def stage_names(cfg: MIPeaksJobConfig) -> list[str]:
    """Every stage the config asks for, in order."""
    return ([f"trajectories:{k}" for k in model_keys(cfg)] + ["enrichment", "comparison"]
            + [s for s in INTERVENTIONS if getattr(cfg, s)])


def format_of(model: HookedModel, cfg: MIPeaksJobConfig, j: int) -> PromptFormat:
    """Prompt format of model ``j``: ``--prompt-format`` resolved for it (auto: a zoo model's own style, else
    its chat template, else plain); where that is a zoo style, ``--prompt-formats`` picks the style when given."""
    fmt = format_for(model, cfg.prompt_format)
    return format_for(model, cfg.prompt_formats[j]) if fmt.is_zoo and cfg.prompt_formats else fmt


def prompts_for(problems: ProblemSet, cfg: MIPeaksJobConfig, j: int, model: HookedModel
                ) -> tuple[list[str], list[str], PromptFormat]:
    """(prompts, golden solution texts, prompt format) of model ``j``."""
    fmt = format_of(model, cfg, j)
    return (fmt.render_problems(problems, model.tokenizer), [gold_text(p, fmt, cfg.gold_format) for p in problems],
            fmt)


def _models_so_far(run: RunFolder) -> list[dict[str, Any]]:
    try:
        return list(read_index(run.path)["models"])
    except ThinklensError:
        return []


def stage_trajectories(model: HookedModel, j: int, problems: ProblemSet, cfg: MIPeaksJobConfig,
                       run: RunFolder, log: Callable[[str], None] | None, shards: Shards | None = None) -> None:
    """Generate and score model ``j``'s trajectories (each process its share under a multi-process launch);
    its entry joins the run index (written by the main process)."""
    order = model_keys(cfg)
    key = order[j]
    prompts, solutions, fmt = prompts_for(problems, cfg, j, model)
    entry = collect_model(model, key=key, name=cfg.models[j], role="reasoning" if j == 0 else "baseline",
                          fmt=fmt, prompts=prompts, solutions=solutions, answers=problems.answers, cfg=cfg,
                          run_path=run.path, progress=log, shards=shards)
    if entry is None:  # not the main process
        return
    models = {m["key"]: m for m in _models_so_far(run)}
    models[key] = entry
    write_index(run.path, to_jsonable([models[k] for k in order if k in models]), peak_rule=cfg.peak_rule)


def stage_enrichment(cfg: MIPeaksJobConfig, run: RunFolder) -> dict[str, Any]:
    """{model key: {unit: {rule: enrichment}}}; unit "words" (the paper) or "all" tokens."""
    out: dict[str, Any] = {}
    for m in read_index(run.path)["models"]:
        records = [read_trajectory(run.path, m["key"], r["i"]) for r in m["index"]]
        out[m["key"]] = {unit: {} for unit in UNITS}
        for unit in UNITS:
            for rule in PEAK_RULES:
                separator = m.get("token_separator", "")
                res = thinking_token_enrichment([TokenTrajectory.of(r.tokens, r.peaks[rule], separator) for r in records],
                                                lowercase=cfg.lowercase, unit=unit, ci=cfg.ci, seed=cfg.seed)
                out[m["key"]][unit][rule] = {
                    "words": res.rows(), "n_trajectories": res.n_trajectories, "n_peak_tokens": res.n_peak_tokens,
                    "n_tokens": res.n_tokens, "ci": res.ci, "level": res.level}
                if res.words:
                    fig = figure_enrichment(res)
                    what = "words" if unit == "words" else "all tokens"
                    fig.update_layout(title={"text": f"{m['name']}, {rule} peaks, {what}: " + fig.layout.title.text})
                    run.write_figure(f"enrichment-{m['key']}-{rule}-{unit}", fig)
    return out


def stage_comparison(run: RunFolder) -> dict[str, Any]:
    """The models side by side: overlay, controls and per-site figures; the models and controls tables."""
    models = read_index(run.path)["models"]
    run.write_figure("overlay", figure_overlay(models, x="fraction", shuffled=True))
    run.write_figure("overlay-step", figure_overlay(models, x="step"))
    run.write_figure("controls", figure_controls(models))
    for m in models:
        run.write_figure(f"sites-{m['key']}", figure_sites(m))
    return {"models": models_table(models), "controls": controls_table(models)}


# ---------------------------------------------------------------- intervention stages


def choose_thinking_words(rows: Sequence[Mapping[str, Any]], explicit: Sequence[str], top: int,
                          vocab_words: Sequence[str] = ()) -> tuple[list[str], str]:
    """(words, source): explicit words, the top enrichment words, or the paper's words in the vocabulary."""
    if explicit:
        return list(explicit), "explicit"
    words = [str(r["word"]) for r in rows if r.get("peak_count", 0) > 0][:top]
    if words:
        return words, "enrichment"
    by_lower = {w.lower(): w for w in vocab_words}
    found = [by_lower[p.lower()] for p in PAPER_WORDS if p.lower() in by_lower][:top]
    return found, "paper words in the vocabulary (no word token at the peaks)"


def thinking_words_for(model: HookedModel, cfg: MIPeaksJobConfig, rows: Sequence[Mapping[str, Any]]
                       ) -> tuple[list[str], str]:
    """The thinking words of the job, checked against the model's vocabulary.

    The interventions act on token ids, so enrichment words that are no whole token of the vocabulary
    (a word the tokenizer always splits, "W" + "ait") are passed over; explicit words must be tokens.
    """
    if cfg.thinking_words:
        token_ids_for_words(model.tokenizer, cfg.thinking_words, lowercase=cfg.lowercase)  # raises on a word it lacks
        return list(cfg.thinking_words), "explicit"
    vocab = {w for w in (word_of(v, cfg.lowercase) for v in decoded_vocab(model.tokenizer)) if w is not None}
    whole = [r for r in rows if str(r["word"]) in vocab]
    words, source = choose_thinking_words(whole, (), cfg.top_words, sorted(vocab))
    if len(whole) < len(rows) and source == "enrichment":
        source = "enrichment (words that are whole tokens)"
    return words, source


def stage_suppression(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, prompts: list[str],
                      answers: list[str], words: list[str], fmt: PromptFormat) -> dict[str, Any]:
    """Accuracy with the thinking words suppressed vs random words vs none."""
    res = suppression_test(model, prompts, answers, words, n_random=cfg.n_random, seed=cfg.seed, pool=cfg.random_pool,
                           max_new_tokens=cfg.max_new_tokens, lowercase=cfg.lowercase, batch_size=cfg.batch_size)
    run.write_figure("suppression", figure_suppression(res))
    return {"rows": [asdict(r) for r in res.rows], "words": list(res.thinking_words), "random_pool": cfg.random_pool,
            "thinking_ids": list(res.thinking_ids), "random_ids": [list(d) for d in res.random_ids],
            "summary": res.summary()}


def rr_layers(model: HookedModel, cfg: MIPeaksJobConfig) -> list[int]:
    """The main RR layer (``rr_layer`` or about 0.72 of the depth) first, then the sweep, each once."""
    main = model.resolve_site(f"resid_post.{default_layer(model.n_layers) if cfg.rr_layer is None else cfg.rr_layer}")
    out = [int(main.layer)]  # type: ignore[arg-type]
    for layer in cfg.rr_layers:
        resolved = int(model.resolve_site(f"resid_post.{layer}").layer)  # type: ignore[arg-type]
        if resolved not in out:
            out.append(resolved)
    return out


def stage_recycling(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, prompts: list[str],
                    answers: list[str], words: list[str], fmt: PromptFormat) -> dict[str, Any]:
    """Representation Recycling vs greedy at the main layer and every swept layer."""
    plain = [t.text for t in model.generate(prompts, max_new_tokens=cfg.max_new_tokens, batch_size=cfg.batch_size)]
    rows = []
    layers = rr_layers(model, cfg)
    for layer in layers:
        res = recycling_eval(model, prompts, answers, words, layer=layer, probability=cfg.rr_probability,
                             seed=cfg.seed, max_new_tokens=cfg.max_new_tokens, batch_size=cfg.batch_size,
                             plain_texts=plain)
        rows.append({**asdict(res), "main": layer == layers[0]})
    run.write_figure("recycling", figure_rr_sweep(rows))
    main = rows[0]
    return {"rows": rows, "words": words, "summary": {"layer": main["layer"], "plain": main["accuracy_plain"],
                                                      "rr": main["accuracy_rr"],
                                                      "best_layer": max(rows, key=lambda r: r["accuracy_rr"])["layer"]}}


def stage_ttts(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, prompts: list[str], answers: list[str],
               words: list[str], fmt: PromptFormat) -> dict[str, Any]:
    """Thinking-token test-time scaling vs plain continuation at every extra-token budget; the final
    answer is asked for with the format's cue (`` Final Answer within \\boxed{}:``; the zoo's ``####``)."""
    use = list(cfg.ttts_words) or words[:2] or ["Wait"]
    res = ttts_eval(model, prompts, answers, words=use, budgets=cfg.ttts_budgets, max_new_tokens=cfg.max_new_tokens,
                    batch_size=cfg.batch_size, answer_prompt=fmt.ttts_cue, answer_tokens=fmt.ttts_tokens)
    run.write_figure("ttts", figure_ttts(res))
    return {"rows": [asdict(r) for r in res.rows], "words": use, "first_pass_accuracy": res.first_pass_accuracy,
            "answer_cue": res.answer_prompt, "answer_tokens": fmt.ttts_tokens,
            "summary": {f"{r.method}@{r.budget}": r.accuracy for r in res.rows}}


def stage_intervention(stage: str, model: HookedModel, problems: ProblemSet, cfg: MIPeaksJobConfig,
                       run: RunFolder) -> dict[str, Any]:
    """One of :data:`INTERVENTIONS` on the reasoning model, with its thinking words (or why it was skipped)."""
    prompts, _, fmt = prompts_for(problems, cfg, 0, model)
    rows = run.read_result("enrichment")[model_keys(cfg)[0]]["words"][cfg.peak_rule]["words"]
    words, source = thinking_words_for(model, cfg, rows)
    if not words:
        return {"skipped": "no thinking words: no word token at the peaks and none of the paper's words "
                           "in the vocabulary", "summary": None}
    runner = {"suppression": stage_suppression, "recycling": stage_recycling, "ttts": stage_ttts}[stage]
    return {**runner(model, cfg, run, prompts, problems.answers, words, fmt), "word_source": source,
            "prompt_format": fmt.name}


def shuffled_control_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first estimator's shuffled-answer control of one model's index entry: mean MI own vs shuffled, and the
    peak-set Jaccard own vs shuffled with its chance level, for the top-k and IQR rules."""
    rows = [r for r in entry.get("controls", []) if r["estimator"] == entry.get("estimator")]
    if not rows:
        return None
    keys = ("mean_mi", "mean_mi_shuffled", "own_beats_shuffled", "peak_jaccard_shuffled", "peak_jaccard_chance",
            "iqr_peak_jaccard_shuffled", "iqr_peak_jaccard_chance")
    return {k: rows[0].get(k) for k in keys}


def summary_of(cfg: MIPeaksJobConfig, run: RunFolder) -> dict[str, Any]:
    """The run's summary (meta.json): per model accuracy, mean MI, peak fractions, top words; intervention headlines."""
    models = read_index(run.path)["models"]
    enrichment = run.read_result("enrichment")
    per_model = {}
    for m in models:
        words = enrichment[m["key"]]["words"][cfg.peak_rule]["words"]
        tokens = enrichment[m["key"]]["all"][cfg.peak_rule]["words"]
        per_model[m["key"]] = {
            "style": m["style"], "prompt_format": m.get("prompt_format"), "accuracy": m["accuracy"], "mean_tokens": m["mean_tokens"],
            "mean_mi": m["mean_mi"][m["site"]], "peak_fraction": m["peak_fraction"],
            "top_words": [w["word"] for w in words[: cfg.top_words]],
            "top_tokens": [w["word"] for w in tokens[: cfg.top_words]],
            "shuffled_control": shuffled_control_of(m), "small_scale": m.get("small_scale"), "budgets": m.get("budgets")}
    main = models[0]
    summary: dict[str, Any] = {
        "n_problems": main["n"], "mean_tokens": main["mean_tokens"],
        "mean_peak_fraction": main["peak_fraction"][cfg.peak_rule],
        "top_words": per_model[main["key"]]["top_words"], "models": per_model,
    }
    for stage in INTERVENTIONS:
        if getattr(cfg, stage):
            summary[stage] = run.read_result(stage).get("summary")
    summary["findings"] = findings_of(cfg, run, models, enrichment)

    # the share of tokens the rule marks: a fact of the run (top-k sets it), with its flag when the peaks are not sparse
    summary["peak_fraction_note"] = peak_fraction_note(
        main["key"], sum(int(r["n_peaks"][cfg.peak_rule]) for r in main["index"]),
        sum(int(r["n_tokens"]) for r in main["index"]), rule=cfg.peak_rule)
    return summary


def findings_of(cfg: MIPeaksJobConfig, run: RunFolder, models: Sequence[Mapping[str, Any]],
                enrichment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's ``findings`` (:mod:`thinklens.analyses.mi.mi_findings`): per model, MI against the shuffled answer paired over
    trajectories (all steps, and where the answer is first written), the peak fraction, the thinking words; then
    the interventions on the reasoning model against their controls."""
    out = []
    for m in models:
        records = [read_trajectory(run.path, m["key"], r["i"]) for r in m["index"]]
        out += fnd.model_findings(m["key"], records, word_rows=enrichment[m["key"]]["words"][cfg.peak_rule]["words"],
                                  rule=cfg.peak_rule, top=cfg.top_words, seed=cfg.seed)
    builders = {"suppression": fnd.suppression_findings, "recycling": fnd.recycling_findings, "ttts": fnd.ttts_findings}
    for stage in INTERVENTIONS:
        if getattr(cfg, stage):
            rows = run.read_result(stage).get("rows")
            if rows:
                out += builders[stage](rows)
    return findings_doc(out)
