"""The ``thinklens`` command line.

Every user error exits with code 2 and one line on stderr (no traceback). Sub-commands live next
to what they run and are mounted here: ``info``, ``capture``, ``zoo``, ``run <job>``, ``app``.

Example:
    >>> build_parser().parse_args(["info", "tiny-think"]).model
    'tiny-think'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from thinklens.errors import ThinklensError

# `thinklens run <job>`: job name -> "module:function" that adds the job's arguments and sets func.
JOBS: dict[str, str] = {
    "mi-peaks": "analyses.mi.cli:add_parser",
    "lynx": "probes.cli:add_lynx_parser",
    "probe": "probes.cli:add_probe_parser",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        sys.stderr.write(f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


def read_prompts(path: str | Path) -> list[str]:
    """Prompts from a .txt file (one per line) or .jsonl (field ``prompt`` or ``question``)."""
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of("prompt file", str(p), "an existing .txt or .jsonl file", "check the path")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise ThinklensError.of("prompt file", str(p), "UTF-8 text", "save the file as UTF-8") from None
    prompts: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if p.suffix == ".jsonl":
            try:
                rec = json.loads(line)
                text = rec.get("prompt", rec.get("question")) if isinstance(rec, dict) else None
            except json.JSONDecodeError:
                text = None
            if not isinstance(text, str) or not text.strip():
                raise ThinklensError.of(f"line {n} of {p}", line[:60], 'a JSON object with a "prompt" or "question" string',
                                        "fix that line")
            prompts.append(text)
        else:
            prompts.append(line)
    if not prompts:
        raise ThinklensError.of("prompt file", str(p), "at least one non-empty prompt", "add prompts, one per line")
    return prompts


def cmd_info(args: argparse.Namespace) -> int:
    from thinklens.model import HookedModel

    m = HookedModel.load(args.model, device=args.device)
    n_params = sum(p.numel() for p in m.hf.parameters())
    info = {"model": args.model, "family": m.family, "model_type": m.config.model_type, "n_layers": m.n_layers,
            "d_model": m.d_model, "vocab": m.vocab_size, "context": m.max_context, "parameters": n_params,
            "sites": [str(s) for s in m.sites]}
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for k, v in info.items():
            if k != "sites":
                print(f"{k}: {v}")
        per_layer = sorted({s.kind for s in m.sites if s.layer is not None})
        print(f"sites: embed, {', '.join(k + '.0..' + str(m.n_layers - 1) for k in per_layer)}, final_norm, logits")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from thinklens.model import HookedModel
    from thinklens.runs import atomic_write_json
    from thinklens.sites import parse_sites
    from thinklens.store import ActivationStore

    prompts = read_prompts(args.prompts)
    m = HookedModel.load(args.model, device=args.device)
    sites = [m.resolve_site(s) for s in parse_sites(args.sites, n_layers=m.n_layers)]
    positions = None if args.positions == "all" else "last"
    out = Path(args.out)
    store = ActivationStore(out)
    atomic_write_json(out / "capture.json", {"model": args.model, "sites": [str(s) for s in sites], "positions": args.positions,
                                             "prompts": str(args.prompts), "n_prompts": len(prompts)})
    done = {p.name.split("-")[2] for p, _ in store.shards()}  # writer id = batch-<k>: resume skips written batches
    for k in tqdm(range(0, len(prompts), args.batch_size), desc="capture", disable=args.no_progress):
        wid = f"b{k // args.batch_size:06d}"
        if wid in done:
            continue
        chunk = prompts[k:k + args.batch_size]
        m.tokenize(chunk)  # checks lengths before any work
        batch = m.capture(chunk, sites, positions=positions)
        mask = batch.attention_mask.bool() if positions is None else None
        rows, meta = {}, []
        for s in sites:
            a = batch.acts[s]
            rows[s] = a[mask] if mask is not None else a[:, -1]
        for r in range(len(chunk)):
            n = int(mask[r].sum()) if mask is not None else 1
            meta += [{"prompt": k + r, "pos": (i if mask is not None else n - 1)} for i in range(n)]
        batch_mb = sum(v.numel() * 4 for v in rows.values()) / 2**20
        with store.writer(f"batch-{wid}", shard_mb=batch_mb) as w:  # one shard per batch: resume is per batch
            w.add(rows, meta=meta)
    store.consolidate()
    print(f"captured {len(store)} rows at {', '.join(map(str, sites))} -> {out}")
    return 0


def cmd_app(args: argparse.Namespace) -> int:
    import subprocess

    app = Path(__file__).resolve().parent.parent / "app" / "Home.py"
    if not app.exists():
        raise ThinklensError.of("app", str(app), "app/Home.py in the thinklens checkout", "run from a source checkout")
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", args.host, "--server.port", str(args.port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal"]
    return subprocess.call(cmd, env={**os.environ, "THINKLENS_RUNS": str(Path(args.runs).resolve())})


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="thinklens", description="interpretability and latent-reasoning workbench")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    info = sub.add_parser("info", help="family, layers and sites of a model")
    info.add_argument("model", help="zoo name (tiny-think), local model folder or hub id")
    info.add_argument("--device", default="cpu")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)
    cap = sub.add_parser("capture", help="capture activations of prompts into an activation store")
    cap.add_argument("model")
    cap.add_argument("--sites", required=True, help="comma-separated sites, e.g. resid_post.1,final_norm or resid_post.*")
    cap.add_argument("--prompts", required=True, help=".txt (one prompt per line) or .jsonl with a prompt/question field")
    cap.add_argument("--out", required=True, help="output folder (an ActivationStore; re-running resumes)")
    cap.add_argument("--positions", choices=("all", "last"), default="all", help="every token or the last prompt token")
    cap.add_argument("--batch-size", type=int, default=16)
    cap.add_argument("--device", default="cpu")
    cap.add_argument("--no-progress", action="store_true")
    cap.set_defaults(func=cmd_capture)
    import importlib

    # command groups that live next to what they run: (module, function taking the subparsers)
    for mod, fn in (("thinklens.zoo.cli", "add_zoo_parser"), ("steering.cli", "add_sae_parser"), ("latent.cli", "add_latent_parser")):
        try:
            getattr(importlib.import_module(mod), fn)(sub)
        except (ImportError, AttributeError):  # pragma: no cover - package absent
            continue
    run = sub.add_parser("run", help="run an analysis job into a run folder")
    jobs = run.add_subparsers(dest="job", required=True, parser_class=_Parser)
    try:
        importlib.import_module("steering.cli").add_steer_jobs(jobs)  # steer, reasoning-vector, hybrid
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    for name, target in JOBS.items():
        mod, fn = target.split(":")
        try:
            getattr(importlib.import_module(mod), fn)(jobs, name)
        except (ImportError, AttributeError):
            continue  # a job whose package is not installed is simply not offered
    app = sub.add_parser("app", help="start the Streamlit app (127.0.0.1 by default)")
    app.add_argument("--host", default="127.0.0.1")
    app.add_argument("--port", type=int, default=8501)
    app.add_argument("--runs", default=os.environ.get("THINKLENS_RUNS", "runs"))
    app.set_defaults(func=cmd_app)
    return p


def _quiet_libraries() -> None:
    """The CLI prints its own progress; silence the libraries' bars and info logs (CLI only)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _quiet_libraries()
    try:
        return int(args.func(args) or 0)
    except ThinklensError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; re-run the same command to resume\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
