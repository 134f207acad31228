"""The token-level trace viewer's logic, testable without Streamlit: links into the viewer, the traces a run
holds, the per-token quantities that colour them, and (on demand, with the model) the logit lens and SAE features
of one position.

The link convention (every page that links to the viewer builds its URL with ``trace_link``):
``/Trace_viewer?run=<run folder relative to the runs root>&trace=<trace id>&quantity=<name>``
with optional ``&token=<position>`` and ``&highlight=<word>``.

Trace ids per run kind:

* ``mi-peaks``: ``<model key>/<problem index>`` (``trajectories/<key>/<index:05d>.json``);
* ``lynx``: ``<test rollout index>`` (the order of ``arrays/test_rollouts.safetensors``);
* ``steer``: ``<arm>/<feature>/<coeff>`` (:func:`steer_trace_id`, a row of ``results/steer.json``);
* ``latent-eval``: ``<problem index>/<method>`` (``results/decoding.json``).

Position ``t`` is generated token ``t``; its per-token values (MI, entropy, probe score, SAE activation, logit lens)
are those of the state that *produced* it (the prompt's last state for ``t = 0``), as the MI store and the feature
statistics define them.

Example:
    >>> trace_link("lynx/demo", "12", "probe", token=30)
    '/Trace_viewer?run=lynx/demo&trace=12&quantity=probe&token=30'
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel

VIEWER_PATH = "/Trace_viewer"
KINDS: tuple[str, ...] = ("mi-peaks", "lynx", "steer", "latent-eval")
"""Run kinds with a trace reader of their own (per-token quantities, marks); every other kind's generated texts are
found by their shape (``trace_records``), so a new job's traces show with no edit here."""
COMPUTED: tuple[str, ...] = ("entropy",)
"""Quantities computed on demand with the model (for traces with token ids)."""


def trace_link(run: str, trace: str, quantity: str, token: int | None = None,
               highlight: str | None = None) -> str:
    """The relative URL of the trace viewer showing ``trace`` of ``run`` coloured by ``quantity``.

    Args:
        run: the run folder relative to the runs root, e.g. ``"mi-peaks/20260101-abc"``.
        trace: the trace id within the run (see the module docstring).
        quantity: the per-token quantity to colour by (e.g. ``"mi"``, ``"entropy"``, ``"probe"``, ``"diff"``,
            ``feature_quantity(633)``).
        token: a position to open (its logit lens and SAE features shown), or None.
        highlight: a word whose occurrences are outlined, or None.

    >>> trace_link("mi-peaks/r1", "3", "mi", token=7, highlight=" so")
    '/Trace_viewer?run=mi-peaks/r1&trace=3&quantity=mi&token=7&highlight=%20so'
    """
    params: dict[str, str] = {"run": str(run), "trace": str(trace), "quantity": str(quantity)}
    if token is not None:
        params["token"] = str(int(token))
    if highlight is not None:
        params["highlight"] = str(highlight)
    return f"{VIEWER_PATH}?{urlencode(params, quote_via=quote, safe='/')}"


def traces_link(run: str, where: str | None = None) -> str:
    """The relative URL of the trace viewer on ``run``'s traces, only those whose field matches ``where``
    (``"correct=false"``: the problems a number counts as wrong) when given.

    >>> traces_link("eval/a", "correct=false")
    '/Trace_viewer?run=eval/a&where=correct%3Dfalse'
    """
    params = {"run": str(run), **({"where": where} if where else {})}
    return f"{VIEWER_PATH}?{urlencode(params, quote_via=quote, safe='/')}"


def feature_quantity(feature: int, sae: str | None = None) -> str:
    """The quantity name of an SAE feature's activation: ``feature:<index>`` (the run's own SAE: a steer run's
    ``--sae``, else the model's newest ``sae`` run) or ``feature:<index>@<SAE folder or sae run folder>``.

    >>> feature_quantity(633), feature_quantity(5, "runs/sae/demo")
    ('feature:633', 'feature:5@runs/sae/demo')
    """
    return f"feature:{int(feature)}" + (f"@{sae}" if sae else "")


def parse_feature_quantity(quantity: str) -> tuple[int, str | None] | None:
    """``(feature, SAE or None)`` of a ``feature:`` quantity; None for any other quantity.

    >>> parse_feature_quantity("feature:633@data/saes/x"), parse_feature_quantity("mi")
    ((633, 'data/saes/x'), None)
    """
    if not quantity.startswith("feature:"):
        return None
    body, _, sae = quantity[len("feature:"):].partition("@")
    try:
        return int(body), (sae or None)
    except ValueError:
        raise ThinklensError.of("quantity", quantity, "feature:<index> or feature:<index>@<SAE folder>",
                                "pick the feature in the viewer's quantity box") from None


def steer_trace_id(row: dict[str, Any]) -> str:
    """The trace id of one row of a steer run's ``results/steer.json`` (its sample): ``<arm>/<feature>/<coeff>``.

    >>> steer_trace_id({"arm": "feature", "feature": 633, "coeff": -1.0})
    'feature/633/-1'
    """
    feature = row.get("feature")
    return f"{row.get('arm')}/{'-' if feature is None else int(feature)}/{float(row.get('coeff', 0.0)):g}"


@dataclass
class TraceData:
    """One trace as the viewer shows it: tokens, per-token quantities, marks and facts."""

    run: str
    """Run folder relative to the runs root."""
    kind: str
    trace_id: str
    model: str | None
    """The model that wrote it (a zoo name or folder), None when unknown."""
    prompt: str
    tokens: list[str]
    token_ids: list[int] | None = None
    """Generated ids (None: the trace cannot be re-run through the model, e.g. latent thoughts)."""
    prompt_ids: list[int] | None = None
    """Prompt ids as the job fed them (None: tokenise ``prompt``)."""
    quantities: dict[str, list[float | None]] = field(default_factory=dict)
    """Name -> one value per token (None: not defined at that token, e.g. a probe score off a cue)."""
    marks: dict[str, list[int]] = field(default_factory=dict)
    """Name -> positions (peaks, cue events, the exit)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Correctness, answers, stop reason: shown above the tokens."""
    details: dict[int, list[tuple[str, float]]] = field(default_factory=dict)
    """Position -> a stored top-k (a latent thought's decoded tokens and probabilities)."""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Named tables shown under the tokens (per-cue scores, exits per δ, the unsteered text's diff)."""
    separator: str = ""
    """Text between tokens when the job joined them (the zoo's word tokens: " "), for finding words."""
    default_quantity: str = ""
    no_lens: str = ""
    """Why the logit lens is not available for this trace ("" when it is)."""


# ----------------------------------------------------------------------------------------------- listing traces

def run_kind(run: str, root: Path | None = None) -> str:
    """The kind of a run given as ``<kind>/<run id>`` (or, for a validation setting's own run, the path of its folder
    under the runs root, ``validate/<id>/settings/<key>/<run>``, whose meta.json names its kind); a clear error for
    anything else."""
    from thinklens.runs.folders import validate_id

    parts = Path(run).parts
    try:
        if len(parts) < 2 or any(p in ("..", ".") for p in parts):
            raise ValueError(run)
        for p in parts:
            validate_id(p, "run path part")
    except (ValueError, ThinklensError):
        raise ThinklensError.of("run", run, "<kind>/<run id> (a run folder under the runs root)",
                                "open the viewer from a page's link, or pick a run in its run box") from None
    if len(parts) == 2 or root is None:
        return parts[0]
    meta = Path(root) / run / "meta.json"
    try:
        return str(json.loads(meta.read_text()).get("kind") or parts[-2])
    except (OSError, ValueError):
        return parts[-2]


def trace_kinds(root: Path) -> list[str]:
    """Every run kind whose runs under ``root`` hold traces: the registered jobs' kinds (the job registry, so a new job
    needs no edit here) and any other kind found there, specialised readers first."""
    from trace_records import has_traces

    from thinklens.runs.folders import discover_runs
    from thinklens.runs.jobs import jobs_by_kind

    kinds = list(KINDS) + [k for k in jobs_by_kind() if k not in KINDS]
    out = []
    for kind in kinds:
        runs = [e for e in discover_runs(root, kind) if e.error is None]
        if runs and (kind in KINDS or any(has_traces(e.path) for e in runs)):
            out.append(kind)
    return out


def list_traces(root: Path, run: str, where: str | None = None) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every trace of ``root/run``, in the run's order (only those matching ``where``, a
    ``field=value`` of the generic records, when given)."""
    kind, path = run_kind(run, root), Path(root) / run
    if kind in KINDS and where is None:
        return _own_traces(kind, path)
    from trace_records import trace_records

    if kind in KINDS and not trace_records(path):
        return []
    return [(r.trace_id, _record_label(r)) for r in trace_records(path, where)]


def _record_label(r: Any) -> str:
    verdict = {True: "right", False: "wrong"}.get(r.facts.get("correct"), "")
    name = r.facts.get("id") or r.facts.get("problem_id") or ""
    return " ".join(str(x) for x in (r.trace_id, name, verdict, f"{len(r.text.split())} words") if x != "")


def _own_traces(kind: str, path: Path) -> list[tuple[str, str]]:
    if kind == "mi-peaks":
        from thinklens.analyses.mi.run_format import read_index

        return [(f"{m['key']}/{r['i']}", f"{m['name']} #{r['i']} {'right' if r['correct'] else 'wrong'}, "
                 f"{r['n_tokens']} tokens") for m in read_index(path)["models"] for r in m["index"]]
    if kind == "lynx":
        ro = _lynx_rollouts(path)
        return [(str(i), f"test rollout #{i} {'right' if c else 'wrong'}, {n} tokens")
                for i, (c, n) in enumerate(zip(ro["correct"].tolist(), ro["length"].tolist()))]
    if kind == "steer":
        return [(steer_trace_id(r), f"{r.get('arm')} {r.get('feature')} × {r.get('coeff'):g}: sample")
                for r in _read_json(path / "results" / "steer.json").get("rows", [])]
    doc = _read_json(path / "results" / "decoding.json")
    return [(f"{i}/{m}", f"problem {i} · {m} ({'right' if v.get('correct') else 'wrong'})")
            for i, p in enumerate(doc) for m, v in p.get("methods", {}).items()]


def load_trace(root: Path, run: str, trace: str) -> TraceData:
    """The trace ``trace`` of ``root/run`` with its stored quantities; a ThinklensError names what is wrong."""
    kind, path = run_kind(run, root), Path(root) / run
    own = {"mi-peaks": _mi_trace, "lynx": _lynx_trace, "steer": _steer_trace, "latent-eval": _latent_trace}
    loader = own[kind] if kind in own and not _is_record_id(path, trace) else _record_trace
    try:
        return loader(path, run, trace)
    except (KeyError, IndexError, ValueError, TypeError, StopIteration) as e:
        if isinstance(e, ThinklensError):
            raise
        raise ThinklensError.of("trace id", f"{trace!r} of {run} ({type(e).__name__}: {e})",
                                "an id the run holds (see the viewer's trace box)", "pick a trace from the list") from None


def _is_record_id(path: Path, trace: str) -> bool:
    from trace_records import trace_records

    return "/" in trace and any(r.trace_id == trace for r in trace_records(path))


def _record_trace(path: Path, run: str, trace: str) -> TraceData:
    """A generic record (``trace_records``): its words, its prompt and its plain fields as facts."""
    from trace_records import record

    r = record(path, trace)
    config = _read_json(path / "config.json") if (path / "config.json").is_file() else {}
    tokens = r.text.split() or [""]
    ids = r.facts.get("token_ids")
    return TraceData(run=run, kind=run_kind(run, path.parents[len(Path(run).parts) - 1]), trace_id=trace,
                     model=config.get("model") or None, prompt=r.prompt, tokens=tokens,
                     quantities={"words": [None] * len(tokens)}, default_quantity="words", separator=" ",
                     facts={k: v for k, v in r.facts.items() if k not in ("prompt", "question")},
                     no_lens="the run stored the text, not its token ids" if not isinstance(ids, list) else "")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ThinklensError.of("result file", str(path), "a readable JSON file written by the job",
                                f"re-run the job for this run ({type(e).__name__})") from None


def _mi_trace(path: Path, run: str, trace: str) -> TraceData:
    from thinklens.analyses.mi.run_format import read_index, read_trajectory

    key, _, i = trace.rpartition("/")
    rec = read_trajectory(path, key, int(i))
    entry = next((m for m in read_index(path)["models"] if m["key"] == key), {})
    q: dict[str, list[float | None]] = {"mi": list(rec.mi[rec.site])}
    q.update({f"mi@{s}": list(c) for s, c in rec.mi.items() if s != rec.site})
    q.update({f"mi shuffled answer ({e})": list(c) for e, c in rec.shuffled.items()})
    q["state norm"] = list(rec.norms)
    return TraceData(
        run=run, kind="mi-peaks", trace_id=trace, model=entry.get("name", rec.model), prompt=rec.prompt,
        tokens=list(rec.tokens), token_ids=list(rec.token_ids), quantities=q,
        marks={f"peak ({rule})": list(p) for rule, p in rec.peaks.items()}, separator=entry.get("token_separator", ""),
        facts={"correct": rec.correct, "gold answer": rec.answer, "parsed answer": rec.parsed,
               "stop": rec.stop_reason, "MI site": rec.site, "estimator": rec.estimator},
        default_quantity="mi")


def _lynx_rollouts(path: Path) -> dict[str, Any]:
    import safetensors.numpy

    try:
        return safetensors.numpy.load_file(str(path / "arrays" / "test_rollouts.safetensors"))
    except OSError as e:
        raise ThinklensError.of("LYNX arrays", str(path / "arrays"), "arrays/test_rollouts.safetensors of a finished run",
                                f"wait for the job to finish or re-run it ({e})") from None


def lynx_test_traces(path: Path) -> list[dict[str, Any]]:
    """The test rollouts of a LYNX run (``cache/rollouts.test.<k>.json`` in batch order)."""
    shards = sorted((Path(path) / "cache").glob("rollouts.test.*.json"))
    out: list[dict[str, Any]] = []
    for s in shards:
        out += _read_json(s)
    return out


def lynx_exits(path: Path) -> dict[float, list[int]]:
    """δ -> the event row each test rollout exits at under LYNX (-1: it ran to the end)."""
    doc = _read_json(Path(path) / "results" / "lynx.json")
    return {float(o["param"]): [int(e) for e in o["exit_event"]] for o in doc["outcomes"] if o["policy"] == "lynx"}


def _lynx_trace(path: Path, run: str, trace: str) -> TraceData:
    import safetensors.numpy

    i = int(trace)
    rollouts = lynx_test_traces(path)
    ro = _lynx_rollouts(path)
    if len(rollouts) != len(ro["length"]):
        raise ThinklensError.of("LYNX test rollouts", f"{len(rollouts)} cached rollouts",
                                f"{len(ro['length'])} (arrays/test_rollouts.safetensors)", "re-run the job into a new run folder")
    r = rollouts[i]
    ev = safetensors.numpy.load_file(str(path / "arrays" / "test_events.safetensors"))
    rows = [j for j in range(len(ev["rollout"])) if int(ev["rollout"][j]) == i]
    tokens = list(r["tokens"])
    probe: list[float | None] = [None] * len(tokens)
    cues = []
    for j in rows:
        pos = int(ev["position"][j])
        if 0 <= pos < len(tokens):
            probe[pos] = float(ev["prob"][j])
        cues.append({"position": pos, "cue": tokens[pos] if 0 <= pos < len(tokens) else "?",
                     "probe score": float(ev["prob"][j]), "forced exit correct": bool(ev["label"][j]),
                     "tokens if exiting here": float(ev["exit_tokens"][j])})
    exits, marks = [], {"cue event": [c["position"] for c in cues]}
    for d, per in sorted(lynx_exits(path).items()):
        row = per[i] if i < len(per) else -1
        pos = int(ev["position"][row]) if row >= 0 else None
        exits.append({"δ": d, "exit position": "no exit (full rollout)" if pos is None else pos,
                      "cue": "" if pos is None else tokens[pos], "forced exit correct":
                      None if row < 0 else bool(ev["label"][row])})
        if pos is not None:
            marks.setdefault(f"exit at δ {d:g}", []).append(pos)
    summary = _read_json(path / "results" / "lynx.json").get("summary", {})
    return TraceData(
        run=run, kind="lynx", trace_id=trace, model=summary.get("model"), prompt=r.get("prompt", ""), tokens=tokens,
        token_ids=list(r.get("token_ids", [])) or None, prompt_ids=list(r.get("prompt_ids", [])) or None,
        quantities={"probe": probe}, marks=marks, separator=" " if r.get("text") == " ".join(tokens) else "",
        facts={"full rollout correct": bool(ro["correct"][i]), "length": int(ro["length"][i]),
               "stop": r.get("stop_reason"), "cue events": len(cues)},
        tables={"cue events (probe score per cue)": cues, "LYNX exit per δ": exits}, default_quantity="probe")


def _steer_trace(path: Path, run: str, trace: str) -> TraceData:
    doc = _read_json(path / "results" / "steer.json")
    rows = doc.get("rows", [])
    row = next(r for r in rows if steer_trace_id(r) == trace)
    base = next((r for r in rows if r.get("arm") == row.get("arm") and r.get("feature") == row.get("feature")
                 and float(r.get("coeff", 1)) == 0.0), None) or next((r for r in rows if float(r.get("coeff", 1)) == 0.0), None)
    tokens = str(row.get("sample", "")).split()
    base_tokens = str(base.get("sample", "")).split() if base else []
    changed, ops = token_diff(base_tokens, tokens)
    config = _read_json(path / "config.json") if (path / "config.json").is_file() else {}
    return TraceData(
        run=run, kind="steer", trace_id=trace, model=config.get("model"), prompt=f"(one of {row.get('n_traces', '?'):g} "
        f"steered samples; prompts: {doc.get('data', '?')})" if isinstance(row.get("n_traces"), float) else "",
        tokens=tokens, quantities={"diff": changed}, default_quantity="diff", separator=" ",
        facts={"arm": row.get("arm"), "feature": row.get("feature"), "coefficient": row.get("coeff"),
               "accuracy (all samples)": row.get("accuracy"), "unsteered accuracy": None if base is None else base.get("accuracy"),
               "site": doc.get("site")},
        tables={"token diff against the unsteered sample (coefficient 0)": ops},
        no_lens="the sample was generated under the steering intervention and its token ids were not stored")


def token_diff(before: list[str], after: list[str]) -> tuple[list[float | None], list[dict[str, Any]]]:
    """Per token of ``after``: 1.0 where it is not in a matching block with ``before`` (inserted or replaced), else
    0.0; and the diff's operations (what was removed, what came instead).

    >>> token_diff(["a", "b", "c"], ["a", "x", "c", "d"])[0]
    [0.0, 1.0, 0.0, 1.0]
    """
    changed: list[float | None] = [1.0] * len(after)
    ops = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "equal":
            for j in range(j1, j2):
                changed[j] = 0.0
        else:
            ops.append({"change": tag, "at position": j1, "unsteered": " ".join(before[i1:i2]),
                        "steered": " ".join(after[j1:j2])})
    return changed, ops


def _latent_trace(path: Path, run: str, trace: str) -> TraceData:
    i, _, method = trace.partition("/")
    p = _read_json(path / "results" / "decoding.json")[int(i)]
    m = p["methods"][method]
    latents = m.get("latents") or []
    tokens = [f"[latent {j + 1}: {lat['tokens'][0]}]" for j, lat in enumerate(latents)]
    words = str(m.get("text", "")).split()
    details = {j: list(zip(lat["tokens"], lat["probs"])) for j, lat in enumerate(latents)}
    q: dict[str, list[float | None]] = {
        "latent top-1 probability": [lat["probs"][0] for lat in latents] + [None] * len(words)}
    if any("entropy" in lat for lat in latents):
        q["latent entropy"] = [lat.get("entropy") for lat in latents] + [None] * len(words)
    return TraceData(
        run=run, kind="latent-eval", trace_id=trace, model=method, prompt=str(p.get("question", "")),
        tokens=tokens + words, quantities=q, details=details, default_quantity="latent top-1 probability", separator=" ",
        marks={"latent thought": list(range(len(latents)))},
        facts={"method": method, "correct": m.get("correct"), "gold answer": p.get("answer"),
               "reference CoT": p.get("cot"), "latent thoughts": len(latents)},
        no_lens="latent thoughts are continuous states, not tokens: their decoded top-k is shown instead")


# ----------------------------------------------------------------------------------------------- display

def colour(value: float | None, lo: float, hi: float) -> str:
    """A white-to-blue background for ``value`` on ``[lo, hi]`` (negative-to-positive ranges: red-white-blue);
    transparent for None or nan.

    >>> colour(None, 0, 1), colour(1.0, 0, 1), colour(0.0, 0, 1), colour(0.3, 0.3, 0.3)
    ('transparent', 'rgba(31,119,180,0.85)', 'rgba(31,119,180,0.00)', 'rgba(31,119,180,0.85)')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "transparent"
    if lo < 0 < hi:  # diverging
        a = min(abs(value) / max(abs(lo), abs(hi)), 1.0) * 0.85
        return f"rgba(31,119,180,{a:.2f})" if value >= 0 else f"rgba(214,39,40,{a:.2f})"
    a = 0.85 if hi <= lo else min(max((value - lo) / (hi - lo), 0.0), 1.0) * 0.85  # one value: full colour
    return f"rgba(31,119,180,{a:.2f})"


PROBABILITIES: tuple[str, ...] = ("probe", "diff", "latent top-1 probability")
"""Quantities in [0, 1] by definition: coloured on that scale, so one trace compares with another."""


def value_range(values: list[float | None], quantity: str = "") -> tuple[float, float]:
    """``(min, max)`` of the defined values (``(0, 1)`` when none, and for the quantities in ``PROBABILITIES``).

    >>> value_range([0.2, None, 0.5]), value_range([0.7], "probe")
    ((0.2, 0.5), (0.0, 1.0))
    """
    xs = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if quantity in PROBABILITIES or not xs:
        return 0.0, 1.0
    return min(xs), max(xs)


def highlighted(tokens: list[str], word: str | None, separator: str = "") -> set[int]:
    """Positions whose token, or the word it belongs to, is ``word`` (case and BPE space markers ignored).

    >>> sorted(highlighted(["so", "x", "So"], "so", " ")), sorted(highlighted([" W", "ait"], "Wait"))
    ([0, 2], [0, 1])
    """
    if not word:
        return set()
    from thinklens.analyses.mi.thinking_tokens import token_of, token_words

    want = word.strip().lower()
    words = token_words(tokens, separator=separator)
    return {t for t, tok in enumerate(tokens)
            if (token_of(tok, lowercase=True) == want) or (words[t] or "").lower() == want}


# ----------------------------------------------------------------------------------------------- enrichment links

def peak_occurrences(root: Path, run: str, key: str, rule: str, word: str, unit: str = "words",
                     lowercase: bool = False) -> list[tuple[int, int]]:
    """``(trajectory index, position)`` of every peak (of ``rule``) whose token counts as ``word`` in the
    enrichment's ``unit`` (``thinklens.analyses.mi.thinking_tokens.UNITS``): the trajectories behind one enrichment row."""
    from thinklens.analyses.mi.run_format import read_index, read_trajectory
    from thinklens.analyses.mi.thinking_tokens import UNITS, TokenTrajectory

    path = Path(root) / run
    entry = next(m for m in read_index(path)["models"] if m["key"] == key)
    separator = entry.get("token_separator", "")
    out = []
    for r in entry["index"]:
        rec = read_trajectory(path, key, r["i"])
        units = UNITS[unit](TokenTrajectory.of(rec.tokens, rec.peaks[rule], separator), lowercase)
        out += [(rec.index, p) for p in rec.peaks[rule] if 0 <= p < len(units) and units[p] == word]
    return out


# ----------------------------------------------------------------------------------------------- with the model

@dataclass(frozen=True)
class Lens:
    """The logit lens of a trace: per position and layer the top-k next tokens, and the next-token entropy."""

    layers: list[int]
    top: list[list[list[tuple[str, float]]]]
    """[position][layer] -> k (token, probability); position t: the state that produced token t."""
    entropy: list[float]
    """Next-token entropy (nats) of the final distribution per position."""
    p_token: list[list[float]]
    """[position][layer] the probability each layer gives to the token actually generated there."""


def prompt_ids_of(model: "HookedModel", trace: TraceData) -> list[int]:
    """The prompt's ids as the job fed them (stored, else the model's own tokenisation of the prompt)."""
    if trace.prompt_ids:
        return list(trace.prompt_ids)
    return model.tokenize(trace.prompt)["input_ids"][0].tolist()


def logit_lens(model: "HookedModel", prompt_ids: list[int], token_ids: list[int], k: int = 5) -> Lens:
    """Every block output of ``prompt_ids + token_ids`` read through the final norm and the LM head.

    Args:
        prompt_ids: the prompt, [P] ids.
        token_ids: the generated tokens, [T] ids; position t reads sequence index P - 1 + t.
        k: tokens kept per position and layer.
    """
    import torch

    from thinklens.engine.sites import Site

    if not prompt_ids or not token_ids:
        raise ThinklensError.of("trace ids", f"{len(prompt_ids)} prompt and {len(token_ids)} generated ids",
                                "a prompt and at least one generated token", "pick a trace with generated tokens")
    layers = list(range(model.n_layers))
    sites = [Site("resid_post", i) for i in layers]
    P, T = len(prompt_ids), len(token_ids)
    with torch.no_grad():
        batch = model.capture([list(prompt_ids) + list(token_ids)], sites)
        top: list[list[list[tuple[str, float]]]] = [[] for _ in range(T)]
        p_token: list[list[float]] = [[] for _ in range(T)]
        entropy: list[float] = []
        ids = torch.tensor(list(token_ids))
        for li, s in enumerate(sites):
            h = batch[s][0, P - 1:P - 1 + T]  # [T, d]
            logp = torch.log_softmax(model.unembed(h).float(), -1)  # [T, vocab]
            p, idx = logp.exp().topk(min(k, logp.shape[-1]), -1)
            p_gen = logp[torch.arange(T), ids].exp().tolist()  # [T]
            for t in range(T):
                top[t].append([(model.tokenizer.decode([int(j)]), float(v)) for j, v in zip(idx[t], p[t])])
                p_token[t].append(p_gen[t])
            if li == len(sites) - 1:
                entropy = (-(logp.exp() * logp).sum(-1)).tolist()
    return Lens(layers=layers, top=top, entropy=entropy, p_token=p_token)


def sae_activations(model: "HookedModel", sae: Any, prompt_ids: list[int], token_ids: list[int]) -> Any:
    """SAE feature activations per generated token, ``[T, feature]`` float32 (row t: the state that produced
    token t), at the site the SAE reads."""
    from thinklens.steering.features import encode
    from thinklens.steering.sae import check_sae

    site = check_sae(model, sae)
    P, T = len(prompt_ids), len(token_ids)
    batch = model.capture([list(prompt_ids) + list(token_ids)], [site])
    return encode(sae, batch[site][0, P - 1:P - 1 + T])


def saes_for(root: Path, model: str | None, run: str | None = None) -> list[tuple[str, str]]:
    """``(label, folder)`` of the SAEs trained on ``model``: a steer run's own ``--sae`` first, then the finished
    ``sae`` runs of that model, newest first."""
    from thinklens.runs.folders import discover_runs

    out: list[tuple[str, str]] = []
    if run and run_kind(run) == "steer":
        cfg_path = Path(root) / run / "config.json"
        sae = (_read_json(cfg_path).get("sae") if cfg_path.is_file() else None) or ""
        if sae:
            out.append((f"the steer run's SAE ({sae})", sae))
    for e in discover_runs(root, "sae"):
        if e.error is None and e.status == "done" and (e.config or {}).get("model") == model:
            out.append((f"sae run {e.run_id} ({(e.config or {}).get('site')})", str(e.path)))
    return out


# ----------------------------------------------------------------------------------------------- the token strip

MARK_STYLES: dict[str, str] = {"peak": "border-bottom:3px solid #2ca02c", "cue event": "border-bottom:3px solid #9467bd",
                               "exit": "box-shadow:inset 0 -3px 0 #d62728", "latent thought": "font-style:italic"}
"""How each kind of mark draws (a mark name starts with one of these)."""
_ESCAPES = str.maketrans({"*": "&#42;", "_": "&#95;", "`": "&#96;", "$": "&#36;", "#": "&#35;", "[": "&#91;",
                          "]": "&#93;", "~": "&#126;", "\\": "&#92;", "|": "&#124;", "<": "&lt;", ">": "&gt;",
                          "&": "&amp;", '"': "&quot;", "'": "&#39;", "\n": "↵", "\r": ""})


def token_text(tok: str) -> str:
    """A token as HTML that Markdown leaves alone (no emphasis, headers, maths or tables); newlines as ↵.

    >>> token_text("#### <b>*x*</b>'")
    '&#35;&#35;&#35;&#35; &lt;b&gt;&#42;x&#42;&lt;/b&gt;&#39;'
    """
    return tok.translate(_ESCAPES)


def tokens_html(trace: TraceData, values: list[float | None], *, quantity: str, selected: int | None = None,
                highlight: str | None = None, marks: tuple[str, ...] | None = None) -> str:
    """The trace's tokens as one HTML block: background = ``values`` (white to blue), a black ring on ``selected``
    (``data-selected``), an orange frame on the ``highlight`` word (``data-highlight``), a line under marked
    positions; each token (``data-pos``) links to this view with ``token=<position>`` (:func:`trace_link`)."""
    lo, hi = value_range(values, quantity)
    lit = highlighted(trace.tokens, highlight, trace.separator)
    chosen = [m for m in trace.marks if marks is None or m in marks]
    out = []
    for t, tok in enumerate(trace.tokens):
        v = values[t] if t < len(values) else None
        style = [f"background:{colour(v, lo, hi)}", "padding:1px 2px", "margin:1px", "border-radius:3px",
                 "color:inherit", "text-decoration:none", "display:inline-block"]
        shadows = []
        for m in chosen:
            if t in trace.marks[m]:
                for k, s in MARK_STYLES.items():
                    if m.startswith(k):
                        (shadows.append(s.split(":", 1)[1]) if s.startswith("box-shadow") else style.append(s))
        attrs = f'data-pos="{t}"'
        if t in lit:
            style.append("outline:2px solid #ff7f0e")
            attrs += ' data-highlight="1"'
        if t == selected:
            shadows.append("0 0 0 3px #111")
            attrs += ' data-selected="1"'
        if shadows:
            style.append("box-shadow:" + ",".join(shadows))
        href = trace_link(trace.run, trace.trace_id, quantity, token=t, highlight=highlight or None)
        title = f"position {t}" + ("" if v is None else f" · {quantity} = {v:.4g}")
        title += "".join(f" · {m}" for m in chosen if t in trace.marks[m])
        out.append(f'<a href="?{token_text(href.split("?", 1)[1])}" target="_self" class="tl-tok" {attrs} '
                   f'title="{token_text(title)}" style="{";".join(style)}">{token_text(tok) or "&nbsp;"}</a>')
    return '<div class="tl-trace" style="line-height:2.0;font-family:monospace;font-size:0.95rem">' + "".join(out) + "</div>"


def link_html(label: str, url: str) -> str:
    """An HTML link to ``url`` that opens in the same tab (for ``st.markdown(..., unsafe_allow_html=True)``).

    >>> link_html("#3 at 7", trace_link("mi-peaks/d", "m/3", "mi", token=7))
    '<a href="/Trace_viewer?run=mi-peaks/d&amp;trace=m/3&amp;quantity=mi&amp;token=7" target="_self" class="tl-link">&#35;3 at 7</a>'
    """
    import html

    return f'<a href="{html.escape(url, quote=True)}" target="_self" class="tl-link">{token_text(label)}</a>'


def lynx_rollout_rows(path: Path, run: str, delta: float) -> list[dict[str, Any]]:
    """One row per test rollout of a LYNX run at ``delta``: its cue events, where LYNX exits (position, cue), whether
    the full rollout and the exit are correct, and its trace-viewer link (coloured by the probe score, the exit opened)."""
    import safetensors.numpy

    ev = safetensors.numpy.load_file(str(Path(path) / "arrays" / "test_events.safetensors"))
    ro = _lynx_rollouts(Path(path))
    exits = lynx_exits(Path(path))
    if float(delta) not in exits:
        raise ThinklensError.of("δ", delta, f"one of {sorted(exits)}", "pick a δ LYNX was evaluated at")
    per = exits[float(delta)]
    n_events = [0] * len(ro["length"])
    for r in ev["rollout"].tolist():
        n_events[r] += 1
    rows = []
    for i, row in enumerate(per):
        pos = int(ev["position"][row]) if row >= 0 else None
        rows.append({"rollout": i, "cue events": n_events[i], "exit position": pos,
                     "exit score": None if row < 0 else float(ev["prob"][row]),
                     "full rollout correct": bool(ro["correct"][i]),
                     "exit correct": None if row < 0 else bool(ev["label"][row]), "length": int(ro["length"][i]),
                     "trace": trace_link(run, str(i), "probe", token=pos)})
    return rows
