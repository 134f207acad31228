"""Peak memory of one hybrid vector-training step (``sentence_nll`` forward and backward) on a real model: the LM head
on every position (the plain formula) against the head on the sentence positions only (``logits_at``).

Each way runs in a fresh interpreter (its peak resident set, ``ru_maxrss``, minus the same interpreter's after the
model loaded), on ``--batch`` right-padded sequences of ``--length`` tokens whose last ``--sentence`` tokens are the
sentence, as hybrid's default ``vector_batch`` (48) of thinking traces gives. Prints name=value lines; last:
hybrid_step_peak_ratio= (full / logits_at, higher is better).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one(model_name: str, way: str, batch: int, length: int, sentence: int) -> dict[str, float]:
    import time

    import torch

    from thinklens import HookedModel
    from thinklens.engine.interventions import HookFn
    from thinklens.steering.hybrid import sentence_nll

    torch.set_num_threads(1)
    model = HookedModel.load(model_name)
    site = model.resolve_site(f"resid_post.{model.n_layers // 2}")
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(10, model.vocab_size - 10, (batch, length), generator=g)
    attn = torch.ones_like(ids)
    steer = torch.zeros_like(ids, dtype=torch.bool)
    steer[:, length - sentence - 1: length - 1] = True
    vec = torch.zeros(model.d_model, requires_grad=True)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    with model.frozen():
        if way == "logits_at":
            loss = sentence_nll(model, {"input_ids": ids, "attention_mask": attn, "steer": steer}, vec, site)
        else:
            def add(act, ctx):
                return act + steer[..., None].to(act.dtype) * vec.to(act.dtype)

            with model.intervene([HookFn(site, add)]):
                logits = model.forward({"input_ids": ids, "attention_mask": attn}).logits
            lp = torch.log_softmax(logits[:, :-1].float(), -1)
            nll = -lp.gather(-1, ids[:, 1:, None])[..., 0]
            m = steer[:, :-1].float()
            loss = (nll * m).sum() / m.sum()
        loss.backward()
    return {"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before,
            "seconds": time.perf_counter() - t, "loss": float(loss), "vocab": model.vocab_size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--sentence", type=int, default=16)
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.model, a.one, a.batch, a.length, a.sentence)))
        return 0
    out = {}
    for way in ("full", "logits_at"):
        proc = subprocess.run([sys.executable, "-m", "bench.hybrid_memory", "--one", way, "--model", a.model, "--batch",
                               str(a.batch), "--length", str(a.length), "--sentence", str(a.sentence)],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        out[way] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"hybrid_step_model={a.model}")
    print(f"hybrid_step_shape={a.batch}x{a.length} (sentence {a.sentence} tokens, vocab {out['full']['vocab']})")
    for way, r in out.items():
        print(f"hybrid_step_{way}_peak_mb={r['peak_mb']:.0f}")
        print(f"hybrid_step_{way}_s={r['seconds']:.2f}")
    print(f"hybrid_step_loss_diff={abs(out['full']['loss'] - out['logits_at']['loss']):.2e}")
    print(f"hybrid_step_peak_ratio={out['full']['peak_mb'] / max(1.0, out['logits_at']['peak_mb']):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
