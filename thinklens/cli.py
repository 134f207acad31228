"""The ``thinklens`` command line: ``info``, ``models``, ``run <job>``, ``runs`` (list, ``show``) and ``app``.

``thinklens run <job>`` is generated from the job contract (:mod:`thinklens.runs.jobs`): the job's config
fields are its options (help = the field docstrings), followed by the options every job shares
(``--model``, ``--seed`` from the config; ``--device``, ``--dtype``, ``--threads``, ``--runs``,
``--run-id``, ``--out``, ``--no-progress``, ``--config FILE``). Jobs are imported only when named, so
``thinklens --help`` stays fast: importing this module loads the job contract and the run listing, never a job
module nor torch (the imports marked ``lazy``). Every user error exits with code 2 and one line on stderr.

Example:
    >>> build_parser().parse_args(["info", "tiny-think"]).model
    'tiny-think'
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from thinklens.calibration.findings import finding_sentence
from thinklens.engine.real_models import list_real_models, real_model_folder
from thinklens.engine.training import launched_rank
from thinklens.errors import ThinklensError, cli_terms, did_you_mean
from thinklens.runs.configcli import add_config_arguments
from thinklens.runs.folders import to_jsonable
from thinklens.runs.interrupts import JobInterrupted
from thinklens.runs.jobs import RunOptions, execute, get_job, job_names
from thinklens.runs.listing import run_table, show_lines, write_lines
from thinklens.zoo.registry import ZOO_DESCRIPTIONS, ZOO_NAMES, zoo_path


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # --n-problem is a typo, not --n-problems: said so, not guessed
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        sys.stderr.write(f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


def cmd_info(args: argparse.Namespace) -> int:
    from thinklens.engine.model import HookedModel  # lazy: CLI start-up (torch, for `thinklens info` alone)

    m = HookedModel.load(args.model, device=args.device)
    n_params = sum(p.numel() for p in m.hf.parameters())
    info = {"model": args.model, "family": m.family, "model_type": m.config.model_type, "n_layers": m.n_layers,
            "d_model": m.d_model, "vocab": m.vocab_size, "context": m.max_context, "parameters": n_params,
            "sites": [str(s) for s in m.sites]}
    if m.source:  # converted weights: the GGUF they came from
        info["source"] = f"{m.source['gguf']} sha256 {m.source['gguf_sha256'][:16]} (dequantized)"
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for k, v in info.items():
            if k == "family" and info["model_type"] != v:  # the adapter family, and the model's own type beside it
                print(f"family: {v} (model_type {info['model_type']})")
            elif k != "sites":
                print(f"{k}: {v}")
        per_layer = sorted({s.kind for s in m.sites if s.layer is not None})
        print(f"sites: embed, {', '.join(k + '.0..' + str(m.n_layers - 1) for k in per_layer)}, final_norm, logits")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """``thinklens models``: the zoo (committed) and the packaged real models (installed by ``make real``)."""
    if args.convert:
        for row in list_real_models():
            if row["installed"]:
                real_model_folder(row["name"])
    rows = [{"name": n, "kind": "zoo", "available": zoo_path(n) is not None, "where": "data/zoo",
             "description": ZOO_DESCRIPTIONS.get(n, "")} for n in ZOO_NAMES]
    for r in list_real_models():
        where = r["converted"] or ("installed, converted on first load" if r["installed"] else "not installed: `make real`")
        rows.append({"name": r["name"], "kind": "real", "available": r["installed"], "where": where,
                     "description": f"{r['description']} [{r['license']}]"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        mark = "yes" if r["available"] else "no "
        print(f"{r['name']:<{width}}  {r['kind']:<4}  {mark}  {r['description']}")
        if r["kind"] == "real":
            print(f"{'':<{width}}              {r['where']}")
    return 0


def app_process(host: str, port: int, runs: str | Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment that serve the Streamlit app (``thinklens app``; the browser tests start it so).

    Streamlit runs the checkout's ``app/Home.py`` with the checkout's root first on ``PYTHONPATH``, since its pages
    import ``app.<module>``, and ``THINKLENS_RUNS`` set to ``runs`` (absolute).
    """
    root = Path(__file__).resolve().parent.parent
    home = root / "app" / "Home.py"
    if not home.exists():
        raise ThinklensError.of("app", str(home), "app/Home.py in the thinklens checkout", "run from a source checkout")
    cmd = [sys.executable, "-m", "streamlit", "run", str(home), "--server.address", host, "--server.port", str(port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal"]
    path = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    return cmd, {**os.environ, "PYTHONPATH": path, "THINKLENS_RUNS": str(Path(runs).resolve())}


def cmd_app(args: argparse.Namespace) -> int:
    cmd, env = app_process(args.host, args.port, args.runs)
    return subprocess.call(cmd, env=env)


def cmd_runs(args: argparse.Namespace) -> int:
    """``thinklens runs``: the runs under the runs root; ``thinklens runs show REF``: one run in full."""
    root = getattr(args, "show_runs", None) or args.runs
    if getattr(args, "runs_command", None) == "show":
        write_lines(show_lines(args.ref, root))
    else:
        write_lines(run_table(root, args.kind))  # `thinklens runs | head -1` ends quietly, exit 0
    return 0


def add_job_parser(jobs: Any, job: Any) -> argparse.ArgumentParser:
    """``thinklens run <job.name>``: the config's fields, then the common options."""
    p = jobs.add_parser(job.name, help=job.help, description=job.about)
    g = p.add_argument_group(f"{job.name} options (a field of {job.config.__name__} each)")
    if job.presets:
        g.add_argument("--preset", default=argparse.SUPPRESS, choices=sorted(set(job.presets) | {"default"}),
                       help="start from a named config; the options given override it")
    add_config_arguments(g, job.config)
    common = p.add_argument_group("common options (every job)")
    common.add_argument("--config", dest="config_file", default=None, metavar="FILE",
                        help="a JSON config (a run folder's config.json reruns that run); options given override it")
    add_config_arguments(common, RunOptions)
    p.set_defaults(func=cmd_run, job=job.name)
    return p


def _unknown_options(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Options no parser knew: the job's own parser says so, with the closest of its options and its ``--help``."""
    job_parser = getattr(parser, "job_parsers", {}).get(getattr(args, "job", None))
    if job_parser is None:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    flags = sorted({o for a in job_parser._actions for o in a.option_strings if o.startswith("--")})
    word = next((a.split("=")[0] for a in extra if a.startswith("-")), extra[0])
    hint = did_you_mean(word, flags) if word.startswith("-") else f"options start with --, e.g. {flags[0]}"
    job_parser.error(f"unrecognized arguments: {' '.join(extra)}; {hint}")


def cmd_run(args: argparse.Namespace) -> int:
    """Run the job named by ``args.job`` through the contract; print its folder and report."""
    job = get_job(args.job)
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(job.config) if hasattr(args, f.name)}
    config = job.make_config(preset=getattr(args, "preset", None), config_file=args.config_file, **given)
    options = RunOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(RunOptions) if hasattr(args, f.name)})
    result, run = execute(job, config, options)
    if launched_rank() != 0:  # under a multi-process launch the main process reports
        return 0
    print(f"run: {run.path}")
    text = job.report(result) if job.report else json.dumps(to_jsonable(result), indent=1)
    lines = text.splitlines() if text else []
    # a report that ends in a headline (``validated=14/14``) keeps it last, after the findings
    last = lines.pop() if lines and re.fullmatch(r"[A-Za-z_][\w.-]*=\S+", lines[-1]) else None
    if lines:
        print("\n".join(lines))
    findings = (run.meta().get("summary") or {}).get("findings") or []
    if findings:  # the closing lines: the same verdicts as the summary JSON, the Home card and the page
        print("findings:")
        for f in findings:
            print(f"  [{f.get('verdict')}] {finding_sentence(f)}")
    elif (run.meta().get("summary") or {}).get("findings_note"):  # a job that claims nothing says why
        print(f"findings: none ({run.meta()['summary']['findings_note']})")
    if last is not None:
        print(last)
    return 0


def build_parser(jobs: "list[str] | None" = None) -> argparse.ArgumentParser:
    """The parser; ``jobs`` names the jobs whose options are loaded (None: every registered job)."""
    p = _Parser(prog="thinklens", description="interpretability and latent-reasoning workbench")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    info = sub.add_parser("info", help="family, layers and sites of a model")
    info.add_argument("model", help="zoo name (tiny-think), real model (smollm2-135m), *.gguf, local model folder or hub id")
    info.add_argument("--device", default="cpu")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)
    models = sub.add_parser("models", help="the zoo and the packaged real models (`make real`), with what is installed")
    models.add_argument("--convert", action="store_true", help="convert every installed real model into the cache now")
    models.add_argument("--json", action="store_true", help="print JSON")
    models.set_defaults(func=cmd_models)
    names = job_names()
    run = sub.add_parser("run", help=f"run a job into a run folder ({', '.join(names)})")
    run_sub = run.add_subparsers(dest="job_name", required=True, parser_class=_Parser, metavar="JOB")
    p.job_parsers = {}  # type: ignore[attr-defined]
    for name in names:
        if jobs is None or name in jobs:
            p.job_parsers[name] = add_job_parser(run_sub, get_job(name))  # type: ignore[attr-defined]
        else:  # not loaded: only the name is known (a job's options load when it is named)
            run_sub.add_parser(name)
    runs = sub.add_parser("runs", help="list the runs (kind, id, status, headline); `runs show KIND/ID` prints one")
    runs.add_argument("--runs", default=None, metavar="DIR", help="the runs root (default: $THINKLENS_RUNS or ./runs)")
    runs.add_argument("--kind", default=None, metavar="JOB", help="only the runs of this kind")
    runs_sub = runs.add_subparsers(dest="runs_command", parser_class=_Parser, metavar="show")
    show = runs_sub.add_parser("show", help="one run: config, status, findings")
    show.add_argument("ref", metavar="RUN", help="KIND/ID, a run id, or a run folder's path")
    show.add_argument("--runs", dest="show_runs", default=None, metavar="DIR", help="the runs root")
    runs.set_defaults(func=cmd_runs)
    app = sub.add_parser("app", help="start the Streamlit app (127.0.0.1 by default)")
    app.add_argument("--host", default="127.0.0.1")
    app.add_argument("--port", type=int, default=8501)
    app.add_argument("--runs", default=os.environ.get("THINKLENS_RUNS", "runs"))
    app.set_defaults(func=cmd_app)
    return p


def _jobs_to_load(argv: list[str]) -> "list[str] | None":
    """Only the job named on the command line (every job for ``thinklens run --help``; none otherwise)."""
    if not argv or argv[0] != "run":
        return []
    named = [a for a in argv[1:] if not a.startswith("-")][:1]
    return named or None


def _quiet_libraries() -> None:
    """The CLI prints its own progress; silence the libraries' bars and info logs (CLI only)."""
    try:
        from transformers.utils import logging as hf_logging  # lazy: CLI start-up (transformers)

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(_jobs_to_load(argv))
    except ThinklensError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    args, extra = parser.parse_known_args(argv)
    if extra:
        _unknown_options(parser, args, extra)
    _quiet_libraries()
    try:
        with cli_terms():  # the fixes of errors name flags (--allow-overlap), not keywords (allow_overlap=)
            return int(args.func(args) or 0)
    except ThinklensError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except KeyboardInterrupt as e:  # SIGINT or SIGTERM: one line, exit 128 + the signal (130, 143), as a shell reports it
        stopped = e if isinstance(e, JobInterrupted) else JobInterrupted.of(e)
        sys.stderr.write(f"{stopped}\n" if stopped.run is not None else
                         f"{stopped}; re-run the same command to resume\n")
        return stopped.exit_code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
