"""The intervention stages of the mi-peaks job on the reasoning model: the suppression test,
Representation Recycling (with a layer sweep) and thinking-token test-time scaling.

All three use the same thinking words: ``--thinking-words`` when given, else the words emitted
most often at the reasoning model's MI peaks (``--top-words`` of them), else -- when no peak token
is a word at all -- the paper's thinking words that exist in the model's vocabulary. The source is
recorded with the results.

Example:
    >>> choose_thinking_words([{"word": "wait", "peak_count": 4}, {"word": "so", "peak_count": 2}], (), 1)
    (['wait'], 'enrichment')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from analyses.mi.figures_interventions import figure_suppression, figure_ttts
from analyses.mi.figures_runs import figure_rr_sweep
from analyses.mi.recycling import default_layer, recycling_eval
from analyses.mi.suppression import suppression_test
from analyses.mi.ttts import ttts_eval
from analyses.mi.vocab import decoded_vocab, token_ids_for_words

if TYPE_CHECKING:
    from analyses.mi.jobconfig import MIPeaksJobConfig
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder

PAPER_WORDS = ("So", "Let", "Hmm", "I", "The", "Okay", "That", "First", "Now", "Wait", "But", "Then", "Since",
               "Therefore")
"""Top thinking words of R1-Distill-Llama-8B in the paper (the fallback list)."""


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
    """The thinking words of the job, checked against the model's vocabulary."""
    vocab = [v.strip() for v in decoded_vocab(model.tokenizer)] if not cfg.thinking_words else []
    words, source = choose_thinking_words(rows, cfg.thinking_words, cfg.top_words, [v for v in vocab if v.isalpha()])
    if words:
        token_ids_for_words(model.tokenizer, words, lowercase=cfg.lowercase)  # raises on a word it lacks
    return words, source


def run_suppression(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, prompts: list[str],
                    answers: list[int], words: list[str]) -> dict[str, Any]:
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


def run_recycling(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, prompts: list[str],
                  answers: list[int], words: list[str]) -> dict[str, Any]:
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


def run_ttts(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, prompts: list[str], answers: list[int],
             words: list[str]) -> dict[str, Any]:
    use = list(cfg.ttts_words) or words[:2] or ["Wait"]
    res = ttts_eval(model, prompts, answers, words=use, budgets=cfg.ttts_budgets, max_new_tokens=cfg.max_new_tokens,
                    batch_size=cfg.batch_size)
    run.write_figure("ttts", figure_ttts(res))
    return {"rows": [asdict(r) for r in res.rows], "words": use, "first_pass_accuracy": res.first_pass_accuracy,
            "summary": {f"{r.method}@{r.budget}": r.accuracy for r in res.rows}}


__all__ = ["PAPER_WORDS", "choose_thinking_words", "rr_layers", "run_recycling",
           "run_suppression", "run_ttts", "thinking_words_for"]
