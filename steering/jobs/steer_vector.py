"""``thinklens run steer-vector``: contrastive activation addition (ActAdd / CAA) on a real model, scored by VADER.

Builds a contrast vector at ``--site`` from ``--pair`` (ActAdd: `` Love`` minus `` Hate``, each read after a neutral
context, never at position 0: :mod:`thinklens.steering.contrast`) or from two sentence files ``--prompts-a`` /
``--prompts-b`` (CAA: the mean last-token state of A minus that of B), adds ``c * unit * v / |v|`` at every position
(prompt and generated; ``unit`` is the typical token-state norm at the site) over the ``--coeffs`` sweep, and scores
the continuations of ``--n-prompts`` neutral sentence starts with VADER's compound sentiment. Controls: the unsteered
model (c = 0) and an equal-norm random direction at every coefficient, every arm sampled with the same seed. A
coefficient's verdict is ``effect`` only where the sentiment moves with its sign against the unsteered model and
beyond the random direction (paired 95% intervals) while fluency stays within the bounds stated in the config
(perplexity of the steered text under the unsteered model, share of degenerate continuations). Results:
``results/steer_vector.json`` (per coefficient and arm: mean compound, the paired shift, perplexity, degenerate share,
sample continuations) and the vector itself (``vectors/contrast.safetensors``).

Example:
    >>> JOB.name, SteerVectorConfig().pair
    ('steer-vector', (' Love', ' Hate'))
    >>> # thinklens run steer-vector --model smollm2-135m --coeffs=-0.2,0,0.2
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinklens.calibration.findings import finding_sentence, findings_doc
from thinklens.data.problemsets import SamplingOptions
from thinklens.data.prompts import read_prompts
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.runs.jobs import DemoRun, Job, JobContext
from thinklens.runs.run_views import TraceData, TraceReader, read_result_json
from thinklens.steering.configs import check_finite
from thinklens.zoo.registry import repo_root

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel

DEFAULT_PROMPTS = "data/real/neutral_prompts.json:prompts"


@dataclass(frozen=True)
class SteerVectorConfig(SamplingOptions):
    """``thinklens run steer-vector``: a contrast vector against the unsteered model and an equal-norm random one."""

    model: str = "smollm2-135m"
    """Real model name (smollm2-135m, gemma-3-270m), zoo name, local model folder or hub id."""
    seed: int = 0
    """Seed of the random direction, the sampling (the same for every arm) and the bootstrap."""
    site: str = "auto"
    """Where the vector is read and added, e.g. resid_post.6 (negative layers count from the end); auto: resid_post at
    three tenths of the depth (layer round(0.3 * n_layers))."""
    pair: tuple[str, ...] = (" Love", " Hate")
    """The contrast pair, positive then negative (ActAdd), each read as a word: a leading space is added when missing."""
    prompts_a: str = ""
    """Instead of --pair: set A's sentences (CAA), a .txt (one per line), .jsonl or .json file; FILE.json:KEY reads the
    list under KEY (data/real/sentiment_sets.json:positive)."""
    prompts_b: str = ""
    """Set B's sentences, as --prompts-a (data/real/sentiment_sets.json:negative)."""
    prompts: str = DEFAULT_PROMPTS
    """Neutral sentence starts that are steered and scored (a file as --prompts-a; relative paths also resolve against
    the repository)."""
    n_prompts: int = 64
    """Prompts steered and scored (the first ones of --prompts)."""
    coeffs: tuple[float, ...] = (-0.2, 0.0, 0.2)
    """Coefficients, in units of the typical token-state norm at the site (0: the unsteered model). Negative lists need
    the = form: --coeffs=-0.2,0,0.2."""
    samples: int = 4
    """Completions per prompt (sampled: a prompt's sentiment is the mean over its completions, since one sampled
    completion's VADER score is mostly sampling noise)."""
    max_new_tokens: int = 40
    """New tokens generated per completion."""
    temperature: float = 0.7
    """Sampling temperature; 0: greedy."""
    top_p: float = 0.9
    """Nucleus sampling mass (sampled runs only; 1 = off)."""
    max_ppl_ratio: float = 2.0
    """Fluency bound, stated beforehand: most perplexity of the steered continuations under the unsteered model,
    over that of the unsteered continuations."""
    max_degenerate: float = 0.2
    """Fluency bound, stated beforehand: most share of degenerate continuations (no word, or too many repeated word
    3-grams: thinklens.steering.contrast.is_degenerate)."""
    prefix: str = "auto"
    """Context read before each contrast text, so that no text sits at position 0 (the attention sink): auto (nothing
    after a BOS the tokenizer adds, else a newline), or a text."""
    batch_size: int = 64
    """Completions per generation batch."""

    def check(self) -> None:
        check_finite("coefficient", self.coeffs, opt("coeffs", (-0.2, 0, 0.2)))
        if not any(c != 0 for c in self.coeffs):
            raise ThinklensError.of(opt_name("coeffs"), self.coeffs, "at least one non-zero coefficient (0 is the unsteered "
                                    "model, always run)", f"pass {opt('coeffs', (-0.2, 0, 0.2))}")
        if bool(self.prompts_a) != bool(self.prompts_b):
            raise ThinklensError.of(f"{opt_name('prompts_a')} / {opt_name('prompts_b')}", (self.prompts_a, self.prompts_b),
                                    f"both sentence files or neither (then {opt_name('pair')})", f"pass {opt('prompts_b', '<FILE>')} too")
        if not self.prompts_a:
            if len(self.pair) != 2 or any(not isinstance(t, str) or not t.strip() for t in self.pair) or \
                    self.pair[0].strip() == self.pair[1].strip():
                raise ThinklensError.of(opt_name("pair"), self.pair, "two different non-empty texts, positive then negative",
                                        f"pass {opt('pair', ('Love', 'Hate'))}")
            object.__setattr__(self, "pair", tuple(t if t[:1].isspace() else " " + t for t in self.pair))
        for name in ("prompts", "prompts_a", "prompts_b"):
            spec = getattr(self, name)
            if spec and texts_path(spec) is None:  # a stat, before the model loads: a typo costs no load
                raise ThinklensError.of(f"{opt_name(name)} file", spec.rsplit(":", 1)[0] if ".json:" in spec else spec,
                                        "an existing .txt, .jsonl or .json file (relative to here or to the repository)",
                                        "check the path")
        if self.site != "auto":
            if Site.parse(self.site).kind in ("logits", "router_logits"):
                raise ThinklensError.of(opt_name("site"), self.site, "a site of model width (resid_post.6, resid_pre.3, mlp_out.2)",
                                        f"pass {opt('site', 'resid_post.6')}")
        for name, lo in (("n_prompts", 2), ("samples", 1), ("max_new_tokens", 1), ("batch_size", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ThinklensError.of(opt_name(name), v, f"an integer >= {lo}", f"pass {opt(name, max(lo, 8))}")
        if not (self.max_ppl_ratio >= 1.0 and 0.0 <= self.max_degenerate <= 1.0):
            raise ThinklensError.of("fluency bounds", (self.max_ppl_ratio, self.max_degenerate),
                                    "max_ppl_ratio >= 1 and max_degenerate in [0, 1]", f"pass {opt('max_ppl_ratio', 2.0)}")


def texts_path(spec: str) -> Path | None:
    """The file of a ``FILE`` or ``FILE.json:KEY`` spec, relative to the working directory or else to the repository;
    None when it does not exist."""
    path = Path(spec.rsplit(":", 1)[0] if ".json:" in spec else spec).expanduser()
    for p in (path, repo_root() / path):
        if p.is_file():
            return p
    return None


def read_texts(spec: str) -> list[str]:
    """The texts of a ``FILE`` (.txt / .jsonl: :func:`thinklens.data.prompts.read_prompts`; .json: a list of strings)
    or ``FILE.json:KEY`` (the list under KEY) spec."""
    path, key = texts_path(spec), spec.rsplit(":", 1)[1] if ".json:" in spec else None
    if path is None:
        raise ThinklensError.of("text file", spec, "an existing file", "check the path")
    if path.suffix != ".json":
        return read_prompts(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        if key not in data:
            lists = [k for k, v in data.items() if isinstance(v, list)]
            raise ThinklensError.of(f"key of {path.name}", key, f"one of {', '.join(lists)}", f"write {path.name}:{lists[0]}"
                                    if lists else "give a JSON list of strings")
        data = data[key]
    if not isinstance(data, list) or not data or any(not isinstance(t, str) or not t.strip() for t in data):
        raise ThinklensError.of(f"texts of {spec}", type(data).__name__, "a non-empty JSON list of non-empty strings",
                                "fix the file")
    return list(data)


def steer_site(model: "HookedModel", site: str) -> "Site":
    """``site`` on this model (a clear error out of range); ``auto``: :func:`thinklens.steering.contrast.default_site`."""
    from thinklens.steering.contrast import default_site  # lazy: CLI start-up (torch)

    return default_site(model) if site == "auto" else model.resolve_site(site)


def preflight(config: SteerVectorConfig) -> None:
    """The sentence files (``--prompts``, ``--prompts-a``, ``--prompts-b``) read before the model loads: a missing,
    malformed or empty file costs no load."""
    for spec in (config.prompts, config.prompts_a, config.prompts_b):
        if spec:
            read_texts(spec)


def run(config: SteerVectorConfig, ctx: JobContext) -> dict[str, Any]:
    """Build the vector, sweep the coefficients against both controls, write the results; returns the summary."""
    from thinklens.steering.contrast import Fluency, contrast_vector, sweep, token_norm  # lazy: CLI start-up (torch)

    cfg, model, log = config, ctx.model, ctx.progress.log
    prompts = read_texts(cfg.prompts)[: cfg.n_prompts]
    a, b = (read_texts(cfg.prompts_a), read_texts(cfg.prompts_b)) if cfg.prompts_a else ([cfg.pair[0]], [cfg.pair[1]])
    site = steer_site(model, cfg.site)
    unit = token_norm(model, prompts, site)
    sv = contrast_vector(model, site, a, b, prefix=cfg.prefix, typical_norm=unit)
    sv.save(ctx.run.path / "vectors" / "contrast")
    source = f"{cfg.prompts_a} - {cfg.prompts_b}" if cfg.prompts_a else f"{cfg.pair[0]!r} - {cfg.pair[1]!r}"
    log(f"contrast vector {source} at {site}: |v| {sv.norm:.1f}, typical token norm {unit:.1f}; {len(prompts)} prompts")
    fluency = Fluency(cfg.max_ppl_ratio, cfg.max_degenerate)
    res = sweep(model, prompts, sv, cfg.coeffs, unit_norm=unit, seed=cfg.seed, max_new_tokens=cfg.max_new_tokens,
                decoding=cfg.decoding(), fluency=fluency, samples=cfg.samples if cfg.sampled else 1,
                batch_size=cfg.batch_size, log=log)
    found = findings_doc(res.findings)
    bounds = {"max_ppl_ratio": fluency.max_ppl_ratio, "max_degenerate": fluency.max_degenerate}
    ctx.run.write_result("steer_vector", {
        "site": str(site), "vector": {"source": source, "n_a": sv.n_a, "n_b": sv.n_b, "norm": sv.norm, "prefix": cfg.prefix},
        "unit_norm": unit, "n_prompts": len(prompts), "samples": cfg.samples if cfg.sampled else 1, "fluency_bounds": bounds,
        "rows": res.rows, "findings": found, "model_source": getattr(model, "source", None)})
    summary = {"site": str(site), "vector": source, "vector_norm": sv.norm, "unit_norm": unit, "n_prompts": len(prompts),
               "findings": found, "headlines": headlines(found)}
    ctx.run.finish(summary)
    return summary


def headlines(findings: list[dict[str, Any]]) -> list[str]:
    """One line per coefficient: the finding in words (never an effect unless its verdict is one)."""
    return [finding_sentence(f) for f in findings]


def report(summary: dict[str, Any]) -> str:
    lines = [f"contrast vector {summary['vector']} at {summary['site']} (|v| {summary['vector_norm']:.1f}, unit "
             f"{summary['unit_norm']:.1f}), {summary['n_prompts']} prompts"]
    return "\n".join(lines + list(summary.get("headlines", [])))


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): how many coefficients moved sentiment fluently."""
    found = summary.get("findings") or []
    hits = [f"{f['extra']['coeff']:+g}" for f in found if f.get("verdict") == "effect" and f.get("extra")]
    return (f"{summary.get('vector', '?')} at {summary.get('site', '?')}: sentiment moved fluently at c="
            f"{', '.join(hits) if hits else 'none'} of {len(found)} coefficients")


def list_traces(path: Path) -> list[tuple[str, str]]:
    """The app's traces of a run: the sample continuations each arm kept (``<arm>/<coeff>/<i>``: the i-th prompt's)."""
    rows = read_result_json(Path(path) / "results" / "steer_vector.json").get("rows", [])
    return [(f"{r['arm']}/{r['coeff']:g}/{i}", f"{r['arm']} c={r['coeff']:+g}: prompt {i}")
            for r in rows for i in range(len(r.get("examples") or []))]


def load_trace(path: Path, run: str, trace: str) -> Any:
    """One sample continuation, with its arm's mean sentiment, shift, perplexity ratio and degenerate share as facts."""
    arm, coeff, i = trace.rsplit("/", 2)
    doc = read_result_json(Path(path) / "results" / "steer_vector.json")
    row = next(r for r in doc.get("rows", []) if r["arm"] == arm and f"{r['coeff']:g}" == coeff)
    config = read_result_json(Path(path) / "config.json") if (Path(path) / "config.json").is_file() else {}
    tokens = str(row["examples"][int(i)]).split() or [""]
    prompts = read_texts(config["prompts"]) if config.get("prompts") and texts_path(config["prompts"]) else []
    return TraceData(
        run=run, kind="steer-vector", trace_id=trace, model=config.get("model"), prompt=prompts[int(i)] if int(i) < len(prompts) else "",
        tokens=tokens, quantities={"words": [None] * len(tokens)}, default_quantity="words", separator=" ",
        facts={"arm": arm, "coefficient": row["coeff"], "vector": doc.get("vector", {}).get("source"), "site": doc.get("site"),
               "mean compound (arm)": row.get("compound"), "shift against unsteered": row.get("shift"),
               "perplexity ratio": row.get("ppl_ratio"), "degenerate share": row.get("degenerate")},
        no_lens="the continuation was generated under the steering intervention and its token ids were not stored")


TRACES = TraceReader(list_traces, load_trace)


# The zoo has no sentiment to move: the demo run shows the job, its controls and its findings end to end (``no effect``
# is the expected verdict there); the real models of `make real` are where the effect is measured (docs/real-models.md).
DEMO = (DemoRun(("--model", "tiny-think", "--pair", " yes, no", "--site", "resid_post.2", "--n-prompts", "16",
                 "--samples", "1", "--max-new-tokens", "12", "--coeffs=-1,0,1")),)

JOB = Job("steer-vector", SteerVectorConfig, run, preflight=preflight, order=72, page="pages/4_Steering.py",
          headline=headline, report=report,
          help="contrastive activation addition (ActAdd/CAA) scored by VADER against a random direction",
          findings="thinklens.steering.contrast:coefficient_finding", capability="Steering", demo=DEMO,
          validations={"actadd": "thinklens.steering.actadd_validation:SETTINGS"},
          traces="thinklens.steering.jobs.steer_vector:TRACES",
          smallest=("--model", "tiny-think", "--pair", " wait, hmm", "--n-prompts", "4", "--samples", "1", "--max-new-tokens", "8",
                    "--coeffs=-0.2,0,0.2", "--site", "resid_post.1"))
