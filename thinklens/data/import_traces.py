"""``thinklens run import-traces``: completions generated elsewhere (vLLM, SGLang, an API),
as :class:`~thinklens.generation.trace.Trace`\\ s.

Each JSONL line holds a prompt and its completion: ``prompt`` (a string) or ``messages`` (an OpenAI-style
list, rendered with the model's chat template and its generation prompt; a final assistant message is the
completion when no completion field is given), ``completion`` or ``response``, and optionally ``answer``
(or ``gold``), ``id``, and token ids (``prompt_ids``/``prompt_token_ids``, ``completion_ids``/``token_ids``/
``output_ids``), which are used as they are. ``--fields completion=output,answer=target`` maps other names.
A completion given as text must keep its special tokens (vLLM: ``skip_special_tokens=False``; a thinklens trace's
``text_with_specials``), or come with its token ids: a span marker that is a special token (harmony's channels, a
``</think>`` that is one) is otherwise missing from it, and the import warns about every completion that never
closes the thinking span it (or its prompt) opens (the warning, the run's ``warnings`` and the report's line).

Tokens: the prompt is tokenized as :meth:`~thinklens.engine.model.HookedModel.generate` tokenizes it; the
completion on its own (no special tokens) and appended, so nothing is re-tokenized across the boundary.
States: one teacher-forced forward per left-padded batch over prompt + completion (its last token is never
fed, as in generation), through the core's site hooks; row t of ``hidden[site]`` is the state at the
position before token t, and ``entropy``/``topk_*`` describe the distribution token t was drawn from, so
an imported trace equals the traced generation of the same tokens. Stop reason: ``imported``.

The run folder holds the states in an :class:`~thinklens.engine.activation_store.ActivationStore` under ``<run>/store`` (one
row per token: ``{"trace", "step", "token"}``), ``results/traces.json`` (the project's trace JSON with the
logit statistics, plus each record's ``line``, ``id`` and ``answer``) and ``results/import.json``;
:func:`load_traces` reads it all back.

Example:
    >>> read_record({"messages": [{"role": "user", "content": "Q"}], "response": "A", "gold": "4"}, 1).answer
    '4'
    >>> JOB.name, ImportTracesConfig(data="c.jsonl", data_fields="completion=output").field_mapping()
    ('import-traces', {'completion': 'output'})
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from thinklens.data.answers import is_correct
from thinklens.data.problemsets import parse_mapping
from thinklens.data.sources import json_lines
from thinklens.engine.capture import NO_FINDINGS, STORE, ReadOptions
from thinklens.engine.sites import Site
from thinklens.engine.tokenization import prompt_ids as tokenized_prompt
from thinklens.errors import ThinklensError, did_you_mean, opt
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import Job, JobContext, Progress

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.generation.trace import Trace

#: Our fields and the names that fill them when no mapping says otherwise (first match wins).
FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "prompt": ("prompt",),
    "messages": ("messages",),
    "completion": ("completion", "response"),
    "answer": ("answer", "gold"),
    "prompt_ids": ("prompt_ids", "prompt_token_ids"),
    "completion_ids": ("completion_ids", "token_ids", "output_ids", "completion_token_ids"),
    "id": ("id",),
}
STOP_REASON = "imported"


@dataclass(frozen=True)
class ImportTracesConfig(ReadOptions):
    """Settings of ``thinklens run import-traces`` (the sites' per-step states are stored; traces are batched
    left padded, similar lengths together)."""

    data: str = ""
    """JSONL file: prompt (or messages) and completion (or response) per line; optional answer and token ids."""
    data_fields: str = ""
    """Field mapping for --data when names differ, e.g. completion=output,answer=target (keys: prompt, messages,
    completion, answer, prompt_ids, completion_ids, id)."""
    batch_size: int = 8
    top_k: int = 5
    """How many top tokens (ids, probabilities) to record per step."""
    renamed: ClassVar[dict[str, str]] = {"fields": "data_fields"}

    def check(self) -> None:
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise ThinklensError.of("top_k", self.top_k, "an integer >= 1", f"pass {opt('top_k', 5)}")
        self.field_mapping()

    def field_mapping(self) -> dict[str, str]:
        """``data_fields`` as {our field: the file's field}."""
        return parse_fields(self.data_fields)


def parse_fields(mapping: Mapping[str, str] | str | None) -> dict[str, str]:
    """A field mapping from a dict or ``"completion=output,answer=target"``, its keys checked against ours."""
    return parse_mapping(mapping, FIELD_NAMES, "completion=output")


@dataclass(frozen=True)
class ImportRecord:
    """One prompt and its completion, as read from one line (text and/or token ids)."""

    line: int
    """Line of the file (or 1-based index of the record), for error messages."""
    prompt: str | None = None
    messages: tuple[dict, ...] | None = None
    completion: str | None = None
    prompt_ids: tuple[int, ...] | None = None
    completion_ids: tuple[int, ...] | None = None
    answer: str | None = None
    id: str | None = None


def _bad(line: int, what: str, row: Mapping[str, Any], received: Any, expected: str, fix: str) -> ThinklensError:
    fields = ", ".join(map(str, row)) or "none"
    return ThinklensError.of(f"{what} on line {line} (fields present: {fields})", received, expected, fix)


def _ids(value: Any, line: int, name: str, row: Mapping[str, Any]) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in value):
        raise _bad(line, name, row, str(value)[:60], "a list of token ids (integers >= 0)", "fix that line")
    return tuple(value)


def read_record(row: Mapping[str, Any], line: int, fields: Mapping[str, str] | str | None = None) -> ImportRecord:
    """One JSON object -> :class:`ImportRecord`; errors name the line and the fields present."""
    if not isinstance(row, Mapping):
        raise ThinklensError.of(f"line {line}", type(row).__name__, "a JSON object", "write one object per line")
    mapping = parse_fields(fields)
    got: dict[str, Any] = {}
    for ours, names in FIELD_NAMES.items():
        if ours in mapping:
            if mapping[ours] not in row:
                raise _bad(line, f"mapped field {ours}={mapping[ours]}", row, mapping[ours], "a field of the line",
                           did_you_mean(mapping[ours], [str(k) for k in row]))
            got[ours] = row[mapping[ours]]
        else:
            got[ours] = next((row[n] for n in names if row.get(n) is not None), None)
    for name in ("prompt", "completion"):
        if got[name] is not None and not isinstance(got[name], str):
            raise _bad(line, name, row, type(got[name]).__name__, "a string", "fix that line")
    messages, completion = got["messages"], got["completion"]
    if messages is not None:
        if not isinstance(messages, list) or not messages or any(
                not isinstance(m, Mapping) or "role" not in m or not isinstance(m.get("content"), str) for m in messages):
            raise _bad(line, "messages", row, str(messages)[:60], 'a list of {"role", "content"} objects', "fix that line")
        if completion is None and got["completion_ids"] is None and messages[-1]["role"] == "assistant":
            messages, completion = messages[:-1], messages[-1]["content"]  # the reply is the last message
        messages = tuple(dict(m) for m in messages)
    if got["prompt"] is None and not messages and got["prompt_ids"] is None:
        raise _bad(line, "prompt", row, "nothing", "a prompt, messages or prompt_ids field",
                   f"map yours, e.g. {opt('data_fields', 'prompt=question')}")
    if completion is None and got["completion_ids"] is None:
        raise _bad(line, "completion", row, "nothing", "a completion, response or completion_ids field",
                   f"map yours, e.g. {opt('data_fields', 'completion=output')}")
    answer = got["answer"]
    return ImportRecord(
        line=line, prompt=got["prompt"], messages=messages or None, completion=completion,
        prompt_ids=None if got["prompt_ids"] is None else _ids(got["prompt_ids"], line, "prompt_ids", row),
        completion_ids=None if got["completion_ids"] is None else _ids(got["completion_ids"], line, "completion_ids", row),
        answer=None if answer is None else str(answer), id=None if got["id"] is None else str(got["id"]))


def read_records(path: str | Path, fields: Mapping[str, str] | str | None = None) -> list[ImportRecord]:
    """Every non-blank line of a JSONL file as an :class:`ImportRecord`."""
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of("traces file", str(p), "an existing JSONL file", f"check the path ({opt('data')})")
    records = [read_record(row, line, fields) for line, row in json_lines(p)]
    if not records:
        raise ThinklensError.of("traces file", str(p), "at least one JSON line", "write one object per completion")
    return records


def tokenize_record(model: "HookedModel", rec: ImportRecord) -> tuple[str, list[int], list[int]]:
    """(prompt text, prompt ids, completion ids): given ids as they are; the prompt tokenized as generate
    tokenizes it; the completion on its own, without special tokens (no merge across the boundary)."""
    tok = model.tokenizer
    prompt = rec.prompt
    if rec.messages is not None and prompt is None:
        if not getattr(tok, "chat_template", None):
            raise ThinklensError.of(f"messages on line {rec.line}", f"{model.name}: a tokenizer without a chat template",
                                    "a model whose tokenizer has one", "give the rendered prompt in a prompt field")
        prompt = tok.apply_chat_template(list(rec.messages), add_generation_prompt=True, tokenize=False)
    prompt_ids = list(rec.prompt_ids) if rec.prompt_ids is not None else tokenized_prompt(tok, prompt)  # one BOS
    if prompt is None:
        prompt = tok.decode(prompt_ids)
    ids = list(rec.completion_ids) if rec.completion_ids is not None else tok(rec.completion, add_special_tokens=False)["input_ids"]
    if not prompt_ids:
        raise ThinklensError.of(f"prompt on line {rec.line}", prompt, "at least one token", "give a non-empty prompt")
    bad = [i for i in prompt_ids + ids if i >= model.vocab_size]
    if bad:
        raise ThinklensError.of(f"token ids on line {rec.line}", bad[:5], f"ids below {model.vocab_size} ({model.name}'s vocabulary)",
                                "import with the model that generated the tokens")
    ctx = model.max_context
    if ctx is not None and len(prompt_ids) + len(ids) - 1 > ctx:
        raise ThinklensError.of(f"length of line {rec.line}", f"{len(prompt_ids) + len(ids)} tokens",
                                f"at most {ctx + 1} (the model's context, plus the last token that is never fed)",
                                "drop or truncate that completion")
    return prompt, prompt_ids, ids


def _logit_stats(logits: Any, k: int, chunk: int = 256) -> tuple[Any, Any, Any]:
    """Entropy (nats) and top-k of ``[batch, n, vocab]`` logits, in float32 as the decode loop computes them;
    ``chunk`` positions at a time, so only one chunk is upcast at once."""
    import torch  # lazy: CLI start-up (torch)

    ent, ids, probs = [], [], []
    for j in range(0, logits.shape[1], chunk):
        logp = torch.log_softmax(logits[:, j:j + chunk].float(), -1)  # [batch, chunk, vocab]
        ent.append(-(logp.exp() * logp).sum(-1))
        p, i = logp.exp().topk(min(k, logp.shape[-1]), dim=-1)
        ids.append(i)
        probs.append(p)
    if not ent:
        b = logits.shape[0]
        return logits.new_zeros((b, 0)).float(), torch.zeros((b, 0, k), dtype=torch.long), logits.new_zeros((b, 0, k)).float()
    return torch.cat(ent, 1).cpu(), torch.cat(ids, 1).cpu(), torch.cat(probs, 1).cpu()


def teacher_force(model: "HookedModel", rows: Sequence[tuple[str, list[int], list[int]]], sites: Sequence["Site"],
                  top_k: int = 5) -> list["Trace"]:
    """Traces of (prompt, prompt ids, completion ids) rows from ONE left-padded forward with the site hooks."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.engine.hooks import site_hooks  # lazy: CLI start-up (torch)
    from thinklens.generation.trace import Trace, decoded_texts  # lazy: CLI start-up (torch)

    n = [len(ids) for _, _, ids in rows]
    nmax = max(n)
    saved: dict = {}

    def saver(site: "Site"):
        def fn(act: torch.Tensor, ctx: Any) -> None:
            saved[site] = act[:, act.shape[1] - nmax:].detach()  # [batch, nmax, d]: rows end together
        return fn

    feed = [p + ids[:-1] for _, p, ids in rows]  # a token's own state comes from the position before it
    with torch.no_grad(), site_hooks(model, [(s, saver(s)) for s in sites]):
        out = model.forward(feed)
    width = out.logits.shape[1]
    ent, topk_ids, topk_probs = _logit_stats(out.logits[:, width - nmax:], top_k)  # [batch, nmax(, k)]
    tok = model.tokenizer
    traces = []
    for r, (prompt, prompt_ids, ids) in enumerate(rows):
        keep = slice(nmax - n[r], nmax)  # row r's last n[r] positions
        traces.append(Trace(
            prompt=prompt, prompt_ids=list(prompt_ids), token_ids=list(ids), tokens=[tok.decode([i]) for i in ids],
            **decoded_texts(tok, list(ids)), stop_reason=STOP_REASON,
            hidden={s: saved[s][r, keep].cpu().clone() for s in sites}, entropy=ent[r, keep].clone(),
            topk_ids=topk_ids[r, keep].clone(), topk_probs=topk_probs[r, keep].clone()))
    return traces


def import_traces(model: "HookedModel", records: Iterable[ImportRecord | Mapping[str, Any]], *,
                  sites: "Sequence[Site | str] | str" = (), fields: Mapping[str, str] | str | None = None,
                  batch_size: int = 8, top_k: int = 5, progress: Progress | None = None) -> list["Trace"]:
    """Traces of completions generated elsewhere, states captured by batched teacher forcing.

    Args:
        records: :class:`ImportRecord`\\ s or JSON-like rows (see the module docstring; ``fields`` maps names).
        sites: sites or patterns (``"resid_post.*"``) whose per-step states each trace holds.

    Example:
        >>> # traces = import_traces(model, [{"prompt": "Q: 3+4 =", "completion": " 7"}], sites="resid_post.*")
    """
    from thinklens.generation.trace import open_span_warning  # lazy: CLI start-up (torch)

    recs = [r if isinstance(r, ImportRecord) else read_record(r, k + 1, fields) for k, r in enumerate(records)]
    if not recs:
        raise ThinklensError.of("records", "none", "at least one prompt and completion", "pass a non-empty list")
    site_list = model.resolve_sites(sites) if sites else []
    rows = [tokenize_record(model, r) for r in recs]
    order = sorted(range(len(rows)), key=lambda k: len(rows[k][1]) + len(rows[k][2]))  # less padding per batch
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    out: dict[int, Trace] = {}
    for batch in (progress or Progress(False)).iter(batches, desc="import traces", total=len(batches)):
        out.update(zip(batch, teacher_force(model, [rows[k] for k in batch], site_list, top_k)))
    traces = [out[k] for k in range(len(rows))]
    note = open_span_warning(traces, model.tokenizer, what="imported", labels=[f"line {r.line}" for r in recs])
    if note:  # a completion whose span never closes: its reasoning/answer split would be all reasoning

        warnings.warn(note, stacklevel=2)
    return traces


# ---------------------------------------------------------------- the job


@dataclass(frozen=True)
class ImportTracesResult:
    """What an import wrote (also ``results/import.json`` and the run's summary)."""

    run: str
    """The run folder, absolute."""
    model: str
    sites: list[str]
    """The sites, patterns expanded."""
    data: str
    """The JSONL file read."""
    n_traces: int
    n_tokens: int
    """Completion tokens over all traces (rows in the store)."""
    n_graded: int
    """Traces with an answer field."""
    accuracy: float | None
    """Share of graded traces whose completion holds the answer (:func:`thinklens.data.answers.is_correct`)."""
    warnings: tuple[str, ...] = ()
    """What the import must say whatever its numbers: completions that never close the thinking span they open
    (:func:`thinklens.generation.trace.open_span_warning`)."""

    def traces(self) -> list["Trace"]:
        """The imported traces, with their states (:func:`load_traces`)."""
        return load_traces(self.run)


def load_traces(run: str | Path) -> list["Trace"]:
    """The traces of an import-traces run folder: token-level JSON, logit statistics and the stored states."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.engine.activation_store import ActivationStore  # lazy: CLI start-up (torch)
    from thinklens.generation.trace import trace_from_json  # lazy: CLI start-up (torch)

    folder = RunFolder.open(run)
    traces = [trace_from_json(doc) for doc in folder.read_result("traces")["traces"]]
    store_dir = folder.path / STORE
    sites = [Site.parse(s) for s in folder.read_result("import")["sites"]]
    if not sites or not any(store_dir.glob("shard-*.json")):
        return traces
    store = ActivationStore(store_dir)
    width = {s: store.shards()[0][1]["sites"][str(s)][0] for s in sites}
    rows: dict[Site, list[list[torch.Tensor]]] = {s: [[] for _ in traces] for s in sites}
    for batch in store.iter_batches(4096, sites, with_meta=True):
        for j, meta in enumerate(batch["meta"]):  # rows are written trace by trace, step by step
            for s in sites:
                rows[s][int(meta["trace"])].append(batch[s][j])
    for k, tr in enumerate(traces):
        tr.hidden = {s: torch.stack(rows[s][k]) if rows[s][k] else torch.zeros(0, width[s]) for s in sites}
    return traces


def run(config: ImportTracesConfig, ctx: JobContext) -> ImportTracesResult:
    """Read the file, teacher-force every batch, write the store, traces.json and import.json."""
    from thinklens.engine.activation_store import ActivationStore  # lazy: CLI start-up (torch)
    from thinklens.generation.trace import open_span_warning, trace_to_json  # lazy: CLI start-up (torch)

    if not config.data:
        raise ThinklensError.of("data", "nothing", "a JSONL file of prompts and completions", f"pass {opt('data', 'completions.jsonl')}")
    records = read_records(config.data, config.field_mapping())
    model = ctx.model
    sites = model.resolve_sites(config.sites) if config.sites else []
    traces = import_traces(model, records, sites=sites, batch_size=config.batch_size, top_k=config.top_k, progress=ctx.progress)
    store_dir = ctx.run.path / STORE
    shutil.rmtree(store_dir, ignore_errors=True)  # a resumed run recomputes: teacher forcing is deterministic
    if sites:
        with ActivationStore(store_dir).writer("traces") as w:
            w.add_traces(traces, [str(k) for k in range(len(traces))])
        ActivationStore(store_dir).consolidate()
    docs = [{**trace_to_json(t, logit_stats=True), "line": r.line, "id": r.id, "answer": r.answer} for t, r in zip(traces, records)]
    ctx.run.write_result("traces", {"model": config.model, "sites": [str(s) for s in sites], "traces": docs})
    graded = [is_correct(t.text, r.answer) for t, r in zip(traces, records) if r.answer is not None]
    note = open_span_warning(traces, model.tokenizer, what="imported", labels=[f"line {r.line}" for r in records])
    result = ImportTracesResult(run=str(ctx.run.path.resolve()), model=config.model, sites=[str(s) for s in sites],
                                data=config.data, n_traces=len(traces), n_tokens=sum(len(t) for t in traces),
                                n_graded=len(graded), accuracy=sum(graded) / len(graded) if graded else None,
                                warnings=(note,) if note else ())
    written = {**{k: v for k, v in asdict(result).items() if k != "run"}, "store": STORE if sites else None,
               **NO_FINDINGS}  # the folder may move; a data job claims nothing
    ctx.run.write_result("import", written)
    ctx.run.finish(written)
    return result


def report(result: ImportTracesResult) -> str:
    """The line the CLI prints after the run folder."""
    acc = "" if result.accuracy is None else f"; accuracy {result.accuracy:.3f} on {result.n_graded}"
    return "\n".join([f"imported {result.n_traces} traces ({result.n_tokens} tokens) at {', '.join(result.sites) or 'no sites'}{acc}",
                      *(f"warning: {w}" for w in result.warnings)])


def preflight(config: ImportTracesConfig) -> None:
    """The traces file read and its fields mapped before the model loads (a missing or malformed file costs no load)."""
    if not config.data:
        raise ThinklensError.of("data", "nothing", "a JSONL file of prompts and completions", f"pass {opt('data', 'completions.jsonl')}")
    read_records(config.data, config.field_mapping())


JOB = Job("import-traces", ImportTracesConfig, run, report=report, preflight=preflight,
          help="import completions generated elsewhere (vLLM, SGLang, an API) as traces with states",
          findings="thinklens.engine.capture:NO_FINDINGS", capability="Models and sites",
          smallest=("--model", "tiny-think", "--data", "{completions}", "--sites", "resid_post.0", "--batch-size", "1"))
