"""LYNX forced-exit labelling: batched vs one event at a time, on the same events.

Rollouts are sampled (temperature ``LYNX_BENCH_TEMPERATURE``, default 1: the zoo's trained reflection
rates, about 3 cue events per rollout) from the zoo's reasoning model (tiny-think, else tiny-pre; a tiny random model
with the zoo tokenizer when the zoo is not trained), cue events found, and every event labelled by
forcing an answer, three ways that must agree exactly:

- ``one_by_one``: each event alone (its prefix read, the exit string appended, greedy decoding);
- ``batched``: the same, events of similar length decoded together (``thinklens.probes.datasets``);
- ``shared``: each rollout read once, every event's decoding continued in batches from a slice of
  its rollout's KV cache (``thinklens.probes.forced``).

The LYNX job also needs the states at the events; it takes them from that same pass over each
rollout (``fused``), where the per-event alternative is a features pass plus one-by-one labelling
(``two_pass``).

Timing: torch runs on one thread; the candidates alternate and the medians are taken, of the
process's CPU time (``time.process_time``: other jobs on a shared machine do not inflate it) and,
for reference, of wall time. Prints name=value lines; the last is the headline ``label_speedup=``:
forced-exit labelling alone, ``one_by_one / shared`` in CPU time (the same labels, both from scratch).
``lynx_features_labels_speedup`` is what the LYNX job saves: ``two_pass / fused`` (the same features
and labels either way; the reference also takes features from one pass and labels event by event).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np
import torch

from bench._targets import print_target

#: Sampling temperature of the rollouts. The zoo model's hmm/wait rates (0.2/0.25 per step in training) are
#: reproduced at temperature 1; at the LYNX reference's 0.6 it rarely reflects (about 2 events per rollout).
TEMPERATURE = float(os.environ.get("LYNX_BENCH_TEMPERATURE", "1.0"))


def interleaved(fns: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (CPU seconds, wall seconds) per call; the candidates alternate so drift hits them alike."""
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    wall: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            c, w = time.process_time(), time.perf_counter()
            f()
            cpu[k].append(time.process_time() - c)
            wall[k].append(time.perf_counter() - w)
    return {k: (statistics.median(cpu[k]), statistics.median(wall[k])) for k in fns}


def _model():
    from thinklens import HookedModel
    from thinklens.zoo.registry import zoo_path

    for name in ("tiny-think", "tiny-pre"):
        if zoo_path(name) is not None:
            return name, HookedModel.load(name)
    from thinklens.zoo.tokenizer import save_zoo_tokenizer, zoo_vocab
    from tools.testing import build_tiny_model

    path = build_tiny_model("llama", tempfile.mkdtemp(prefix="bench-lynx-"), d_model=128, n_layers=4,
                            vocab_size=len(zoo_vocab()) + 8, n_ctx=256)
    save_zoo_tokenizer(path)
    return "random-zoo-tokenizer", HookedModel.load(str(path))


def main() -> None:
    from thinklens.probes.datasets import event_features, forced_exit_labels, rollout_events
    from thinklens.probes.forced import event_features_and_labels, forced_exit_labels_shared
    from thinklens.probes.lynx import LynxConfig, lynx_sites
    from thinklens.tasks import TaskConfig, generate_problems, render_prompt
    from thinklens.tasks.protocol import token_budget

    torch.set_num_threads(1)
    name, model = _model()
    # the zoo's longer problems: LYNX is about long rollouts with several cues each
    problems = generate_problems(48, seed=7, config=TaskConfig(min_steps=4, max_steps=8))
    traces = model.generate([render_prompt(p, "think") for p in problems], max_new_tokens=token_budget("think", 8),
                            do_sample=True, seed=0, temperature=TEMPERATURE, top_p=0.95, batch_size=16)
    config = LynxConfig(cue_words=("hmm", "wait"), exit_string="</think> ####", max_answer_tokens=8)
    events = rollout_events(traces, model.tokenizer, config, "test")
    gold = [p.answer for p in problems]
    kw = dict(exit_string=config.exit_string, max_answer_tokens=config.max_answer_tokens)

    def shared():
        return forced_exit_labels_shared(model, traces, events, gold, batch_size=64, **kw)

    def batched():
        return forced_exit_labels(model, traces, events, gold, batch_size=64, **kw)

    def one_by_one():
        return forced_exit_labels(model, traces, events, gold, batch_size=1, **kw)

    sites = lynx_sites(model.n_layers)

    def fused():
        return event_features_and_labels(model, traces, events, gold, sites, batch_size=64, **kw)

    def two_pass():
        return event_features(model, traces, events, sites, batch_size=16), one_by_one()

    a, b, c = shared(), batched(), one_by_one()
    (X, d), (X2, _) = fused(), two_pass()
    same = all(np.array_equal(a.label, x.label) and a.answer == x.answer
               and np.array_equal(a.answer_tokens, x.answer_tokens) for x in (b, c, d))
    both = interleaved({"shared": shared, "batched": batched, "one_by_one": one_by_one}, repeats=7)
    both.update(interleaved({"fused": fused, "two_pass": two_pass}, repeats=7))
    t = {k: v[0] for k, v in both.items()}  # CPU seconds
    wall = {k: v[1] for k, v in both.items()}
    n = int(a.label.shape[0])
    print(f"lynx_model={name}")
    print(f"lynx_rollouts={len(traces)}")
    print(f"lynx_events={n}")
    print(f"lynx_cue_events={sum(not e.is_fallback for evs in events for e in evs)}")
    print(f"lynx_temperature={TEMPERATURE}")
    print(f"lynx_events_per_rollout={n / len(traces):.2f}")
    print(f"lynx_mean_rollout_tokens={np.mean([len(t) for t in traces]):.1f}")
    print(f"lynx_label_base_rate={a.label.mean():.3f}")
    print(f"lynx_labels_equal={int(same)}")
    print(f"lynx_label_one_by_one_s={t['one_by_one']:.4f}")
    print(f"lynx_label_batched_s={t['batched']:.4f}")
    print(f"lynx_label_shared_s={t['shared']:.4f}")
    print(f"lynx_label_events_per_s_shared={n / t['shared']:.1f}")
    print(f"lynx_features_equal={int(bool(np.allclose(X, X2, atol=1e-4)))}")
    print(f"lynx_features_labels_two_pass_s={t['two_pass']:.4f}")
    print(f"lynx_features_labels_fused_s={t['fused']:.4f}")
    print(f"lynx_label_speedup_batched_only={t['one_by_one'] / t['batched']:.2f}")
    print(f"lynx_label_one_by_one_wall_s={wall['one_by_one']:.4f}")
    print(f"lynx_label_shared_wall_s={wall['shared']:.4f}")
    print(f"lynx_label_speedup_wall={wall['one_by_one'] / wall['shared']:.2f}")
    print(f"lynx_features_labels_speedup={t['two_pass'] / t['fused']:.2f}")
    print_target("label_speedup")
    print(f"label_speedup={t['one_by_one'] / t['shared']:.2f}")


if __name__ == "__main__":
    main()
