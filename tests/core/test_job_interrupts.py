"""Every job, stopped by SIGINT or SIGTERM at a random point and re-run, ends where an uninterrupted run ends.

For each registered job, with the smallest options it declares (``Job.smallest``): an uninterrupted run through the CLI counts the
job's ticks (every module call of a model, every stage item, file, progress step and log line the job makes after
its run folder opened); a second run raises a seeded random signal at a seeded random tick (``signal.raise_signal``:
the real handler runs, wherever the job is: in a forward pass, between a cache file and its progress line, in a
library's loop); it must exit 128 + the signal (130 or 143) with one line on stderr, no traceback, its meta.json
``interrupted``; the same command again must finish it, and its results (every result, figure and weight file,
the summary) must equal the uninterrupted run's.

Sizes are the smallest each job accepts (the committed zoo's tiny models, a few problems), so the table fits the
default tier.
"""

from __future__ import annotations

import json
import random
import re
import signal
from pathlib import Path

import pytest

from thinklens.zoo.registry import zoo_path

pytestmark = pytest.mark.skipif(any(zoo_path(m) is None for m in ("tiny-think", "tiny-cot", "tiny-pre")),
                                reason="needs the committed zoo")

SEED = 41  # the draws of signal and tick, per job


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """Small input files the jobs read: prompts, completions to import."""
    root = tmp_path_factory.mktemp("inputs")
    prompts = root / "prompts.txt"
    prompts.write_text("Q: 2 + 3 = ?\nQ: 4 + 1 = ?\nQ: 5 + 2 = ?\n")
    completions = root / "completions.jsonl"
    rows = [{"prompt": f"Q: {a} + {b} = ?", "completion": f" {a} + {b} = {a + b} #### {a + b}", "gold": str(a + b)}
            for a, b in ((2, 3), (4, 1), (5, 2))]
    completions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"prompts": str(prompts), "completions": str(completions), "root": str(root)}


def _smallest() -> dict[str, tuple[str, ...]]:
    """job -> its smallest CLI options, as each job declares them (``Job.smallest``; ``{prompts}``, ``{completions}``:
    the files of ``inputs``, ``{out}``: the run folder); a job that declares none is listed with none."""
    from thinklens.runs.jobs import all_jobs

    return {job.name: job.smallest for job in all_jobs()}


CASES: dict[str, tuple[str, ...]] = _smallest()


def _tiny_zoo_recipe(monkeypatch) -> None:
    """zoo-train's tiny-pre recipe cut to 5 steps of a one-layer model (as tests/zoo/test_zoo.py does)."""
    from thinklens.tasks import TaskConfig
    from thinklens.zoo.modeling import ZooModelConfig
    from thinklens.zoo.recipes import RECIPES
    from thinklens.zoo.trainer import with_overrides

    monkeypatch.setitem(RECIPES, "tiny-pre", with_overrides(
        RECIPES["tiny-pre"], steps=5, warmup_steps=2, batch_tokens=256, task=TaskConfig(max_steps=2),
        model=ZooModelConfig(d_model=16, n_layers=1, n_heads=2, d_ffn=32)))


#: what a job needs set up before it runs (in this process)
SETUP = {"zoo-train": _tiny_zoo_recipe}


class Ticks:
    """Counts the job's ticks after its run folder opened; with ``stop_at``, raises ``sig`` at that tick."""

    def __init__(self, monkeypatch, stop_at: int | None = None, sig: int = signal.SIGINT):
        self.count, self.started, self.stop_at, self.sig, self.mp = 0, False, stop_at, sig, monkeypatch

    def tick(self) -> None:
        if not self.started:
            return
        self.count += 1
        if self.count == self.stop_at:
            signal.raise_signal(self.sig)

    def __enter__(self) -> "Ticks":
        import torch

        from thinklens.runs import folders, jobs, stages

        tick = self.tick
        self.hook = torch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: tick())
        write_meta, mark_done, write_bytes = folders.RunFolder.write_meta, folders.RunFolder.mark_done, folders.atomic_write_bytes
        log, iterate = jobs.Progress.log, jobs.Progress.iter

        def on_meta(run, **fields):
            write_meta(run, **fields)
            if fields.get("status") == "running" and "job" in fields:
                self.started = True

        def on_done(run, item, payload=None):
            tick()
            mark_done(run, item, payload)
            tick()

        def on_write(path, data):
            tick()
            write_bytes(path, data)

        def on_log(p, message):
            tick()
            log(p, message)

        def on_iter(p, iterable, desc="", total=None):
            for x in iterate(p, iterable, desc=desc, total=total):
                tick()
                yield x

        self.mp.setattr(folders.RunFolder, "write_meta", on_meta)
        self.mp.setattr(folders.RunFolder, "mark_done", on_done)
        self.mp.setattr(folders, "atomic_write_bytes", on_write)
        self.mp.setattr(stages, "atomic_write_bytes", on_write)
        self.mp.setattr(jobs.Progress, "log", on_log)
        self.mp.setattr(jobs.Progress, "iter", on_iter)
        return self

    def __exit__(self, *exc) -> None:
        self.hook.remove()
        self.mp.undo()


SKIP = ("meta.json", "config.json", "progress.jsonl")
TIMING = re.compile(r"^(seconds|.*_s)$")  # wall-clock and CPU seconds (train_wall_s, eval_s, ...): measured, not computed


def _untimed(doc):
    if isinstance(doc, dict):
        return {k: _untimed(v) for k, v in doc.items() if not TIMING.match(str(k))}
    if isinstance(doc, list):
        return [_untimed(v) for v in doc]
    return doc


def outputs(folder: Path) -> dict[str, object]:
    """What a run produced: every file but its bookkeeping (meta, config, progress, stage cache, the html copies of
    figures), JSON parsed without its timings, the folder's own path written as <run>; and meta's summary."""
    out: dict[str, object] = {}
    text = str(folder.resolve())
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if not p.is_file() or rel.parts[0] in ("cache", "checkpoint") or p.name in SKIP or p.suffix == ".html" \
                or p.name.startswith(("progress.", ".")):
            continue
        data = p.read_bytes()
        out[str(rel)] = _untimed(json.loads(data.decode().replace(text, "<run>"))) if p.suffix == ".json" else data
    meta = json.loads((folder / "meta.json").read_text())
    out["meta.summary"] = _untimed(json.loads(json.dumps(meta.get("summary")).replace(text, "<run>")))
    return out


def run_cli(argv: list[str]) -> int:
    from thinklens.cli import main

    return main(argv)


@pytest.mark.parametrize("name", sorted(CASES))
def test_interrupted_job_resumes_to_the_uninterrupted_results(name, inputs, tmp_path, monkeypatch, capsys):
    if not CASES[name]:
        pytest.skip(f"{name} declares no smallest run (Job.smallest): it needs more than the committed zoo")
    args = [a.format(**inputs, out="{out}") for a in CASES[name]]
    rng = random.Random(f"{SEED}:{name}")
    sig = rng.choice((signal.SIGINT, signal.SIGTERM))

    if name in SETUP:
        SETUP[name](monkeypatch)

    def argv(out: Path) -> list[str]:
        return ["run", name, *(a.replace("{out}", str(out)) for a in args), "--out", str(out), "--no-progress"]

    with Ticks(pytest.MonkeyPatch()) as ticks:
        assert run_cli(argv(tmp_path / "straight")) == 0
    assert ticks.count > 2, f"{name}: too few ticks to interrupt ({ticks.count})"
    at = rng.randint(1, max(1, ticks.count * 9 // 10))
    bars = re.findall(r".*\d+%\|.*", capsys.readouterr().err)
    assert not bars, f"{name}: a progress bar under --no-progress: {bars[0]}"  # sae-lens's own trainer bar was one

    killed = tmp_path / "killed"
    with Ticks(pytest.MonkeyPatch(), stop_at=at, sig=sig):
        code = run_cli(argv(killed))
    err = capsys.readouterr().err
    assert code == 128 + sig, f"{name}: exit {code} at tick {at}/{ticks.count}\n{err}"
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(f"interrupted by {signal.Signals(sig).name}")
    meta = json.loads((killed / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["interruptions"][-1]["signal"] == signal.Signals(sig).name

    assert run_cli(argv(killed)) == 0
    assert json.loads((killed / "meta.json").read_text())["status"] == "done"
    straight, resumed = outputs(tmp_path / "straight"), outputs(killed)
    assert sorted(resumed) == sorted(straight)
    for key in straight:
        assert resumed[key] == straight[key], f"{name}: {key} differs after the resume (tick {at}/{ticks.count})"


def test_ctrl_c_from_outside_during_sae_training(tmp_path):
    """The reported case, as a user meets it: ``thinklens run sae`` in its own process, SIGINT sent from outside while
    sae-lens trains (a seeded random wait after its "Training SAE" bar shows): exit 130, one line, meta interrupted.
    It ended in sae-lens's InterruptedException, exit 1, meta "running"."""
    import os
    import subprocess
    import sys
    import time

    out = tmp_path / "sae"
    args = list(CASES["sae"])
    args[args.index("--training-tokens") + 1] = "400000"  # long enough to be inside the training when the signal comes
    cmd = [sys.executable, "-c", "import sys; from thinklens.cli import main; sys.exit(main())", "run", "sae", *args,
           "--out", str(out)]  # with its bars: the trainer's tells when the training runs
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.getcwd()})
    seen = b""
    while b"Training SAE" not in seen:
        chunk = os.read(proc.stderr.fileno(), 4096)
        assert chunk, f"sae ended before training: {seen.decode(errors='replace')}"
        seen += chunk
    time.sleep(random.Random(SEED).uniform(0.1, 0.5))
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    err = (seen + rest).decode(errors="replace")
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "InterruptedException" not in err, err
    assert err.count(f"interrupted by SIGINT; re-run the same command to resume {out}\n") == 1, err  # after the bar
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted" and not (out / "sae" / "cfg.json").exists()  # stopped inside the training
