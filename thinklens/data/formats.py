"""Prompt formats and thinking spans: how a problem becomes one model's prompt, which generated tokens
are reasoning and which are the answer, and the answer cues that forced exits (LYNX) and test-time
scaling (TTTS) append. A format is data chosen per model, never a zoo constant in an analysis.

Prompt formats (one name for the idea: ``--prompt-format``, a config's ``prompt_format``, :attr:`PromptFormat.name`;
the zoo's task calls its three renderings "styles": a zoo style is a zoo model's prompt format):

- ``chat``: the model's own ``apply_chat_template`` with the generation prompt, keeping whatever the
  template opens the thinking span with (R1's ``<think>\\n``); the user turn is the problem and, on its
  own line, the instruction the R1 distills and LYNX recommend (:data:`R1_INSTRUCTION`).
- ``plain``: the problem text alone, no template (as the MI-peaks reference encodes it).
- ``direct`` / ``cot`` / ``think``: the zoo's styles (:mod:`thinklens.tasks.render`), answer cue ``####``.
- ``auto``: a zoo model's own format (its zoo.json, else its zoo style), else ``chat`` when the tokenizer
  has a chat template, else ``plain``.

Thinking spans by family (:data:`SPANS`): ``<think>``/``</think>`` (R1 distills, QwQ, Qwen3,
Phi-4-reasoning, OLMo-3-Think), gpt-oss's harmony channels (``<|channel|>analysis<|message|>`` ...
``<|end|>``, then ``<|channel|>final<|message|>``), Magistral's ``[THINK]``/``[/THINK]`` and EXAONE's
``<thought>``/``</thought>``.

Example:
    >>> out = "Okay, 7 + 5 = 12. Wait, 12.\\n</think>\\n\\nThe answer is \\\\boxed{12}."
    >>> split = split_thinking(out, SPANS["think"], opened=True)
    >>> reasoning, answer = split.parts(out)
    >>> reasoning, answer
    ('Okay, 7 + 5 = 12. Wait, 12.\\n', '\\n\\nThe answer is \\\\boxed{12}.')
    >>> chat = PromptFormat("chat", span=SPANS["think"])
    >>> chat.lynx_exit, chat.ttts_cue, chat.ttts_tokens
    ('</think>\\n\\nFinal Answer: \\\\boxed{', ' Final Answer within \\\\boxed{}:', 16)
    >>> PromptFormat("think", span=ZOO_THINK_SPAN).lynx_exit, PromptFormat("cot").ttts_cue
    ('</think> ####', ' ####')
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from thinklens.errors import ThinklensError, did_you_mean, opt
from thinklens.tasks import Problem
from thinklens.tasks.problem import spaced
from thinklens.tasks.protocol import model_style, zoo_meta
from thinklens.tasks.render import CUES, render_prompt

#: The user-message instruction the R1 distills and LYNX recommend (after the problem, on its own line).
R1_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."

#: The prompt formats ``--prompt-format`` accepts.
PROMPT_FORMATS: tuple[str, ...] = ("auto", "chat", "plain", "direct", "cot", "think")
#: The zoo's prompt formats (its styles: spaced words, ``####`` answers).
ZOO_FORMATS: tuple[str, ...] = ("direct", "cot", "think")

#: The answer cues of the papers' reference code: LYNX's forced exit after the span's close marker,
#: TTTS's final-answer request and how many tokens it reads after it.
LYNX_ANSWER = "\n\nFinal Answer: \\boxed{"
TTTS_CUE, TTTS_TOKENS = " Final Answer within \\boxed{}:", 16
#: The zoo's answer marker and how many tokens an answer after it takes.
ZOO_CUE, ZOO_CUE_TOKENS = " ####", 8


@dataclass(frozen=True)
class ThinkingSpan:
    """The markers around one family's reasoning."""

    family: str
    """Short name: think, harmony, magistral, exaone (zoo-cot for the zoo's equations before ``####``)."""
    open: str
    """Text that opens the span ("" when the reasoning starts with the output, as the zoo's cot chains)."""
    close: str
    """Text that closes it."""
    answer_open: str = ""
    """Text after the close that opens the answer (harmony's final channel); skipped by the split."""
    exit_open: str = ""
    """What a forced exit writes after the close to open the answer (harmony: a new assistant message in
    the final channel)."""


SPANS: dict[str, ThinkingSpan] = {
    "think": ThinkingSpan("think", "<think>", "</think>"),
    "harmony": ThinkingSpan("harmony", "<|channel|>analysis<|message|>", "<|end|>",
                            answer_open="<|channel|>final<|message|>",
                            exit_open="<|start|>assistant<|channel|>final<|message|>"),
    "magistral": ThinkingSpan("magistral", "[THINK]", "[/THINK]"),
    "exaone": ThinkingSpan("exaone", "<thought>", "</thought>"),
}
#: The zoo's spans: think traces close with ``</think>`` (after the ``<think>`` cue of the prompt); a cot
#: chain is the reasoning and ``####`` starts the answer.
ZOO_THINK_SPAN = SPANS["think"]
ZOO_COT_SPAN = ThinkingSpan("zoo-cot", "", "####")


@dataclass(frozen=True)
class ThinkingSplit:
    """Where the reasoning and the answer of one output are: index ranges into the characters of a text,
    or into the list of tokens that was split. Markers belong to neither."""

    reasoning: range
    """Indices of the reasoning (empty when the output has no span)."""
    answer: range
    """Indices of the answer (what follows the close marker; everything when there is no span)."""
    closed: bool
    """Whether the span was closed (False: the output stopped while reasoning, or had no span)."""

    @staticmethod
    def no_span(n: int) -> "ThinkingSplit":
        """The split of an output of length ``n`` without a reasoning span: everything is answer."""
        return ThinkingSplit(range(0), range(0, n), False)

    def parts(self, output: str | Sequence[Any]) -> tuple[Any, Any]:
        """``(reasoning, answer)`` cut from the output that was split (strings or token lists)."""
        return (output[self.reasoning.start : self.reasoning.stop], output[self.answer.start : self.answer.stop])


def _char_split(text: str, span: ThinkingSpan, opened: bool) -> tuple[int, int, int, bool] | None:
    """``(reasoning_start, reasoning_stop, answer_start, closed)`` in characters, or None: no reasoning."""
    start = 0 if (opened or not span.open) else -1
    if span.open:
        at = text.find(span.open)
        close_first = text.find(span.close)
        # An open marker counts unless the output already closed a span the prompt opened before it.
        if at >= 0 and not (opened and 0 <= close_first < at):
            start = at + len(span.open)
    if start < 0:
        if text.find(span.close) < 0:
            return None
        start = 0  # a close without an open: the reasoning began with the output (R1 without its template)
    stop = text.find(span.close, start)
    if stop < 0:
        return start, len(text), len(text), False
    answer = stop + len(span.close)
    if span.answer_open:
        nxt = text.find(span.answer_open, answer)
        if nxt >= 0:
            answer = nxt + len(span.answer_open)
    return start, stop, answer, True


def split_thinking(output: str | Sequence[Any], span: ThinkingSpan | None, *, opened: bool = False) -> ThinkingSplit:
    """Split a generated output into reasoning and answer.

    Args:
        output: the generated text, or its tokens as strings (a :class:`~thinklens.generation.trace.Trace`'s
            ``tokens``): the ranges are then token indices; a token that overlaps a marker belongs to
            neither part.
        span: the family's markers (None: no reasoning span, all answer).
        opened: the prompt already opened the span (R1's generation prompt ends with ``<think>\\n``), so
            the output starts inside it and holds only the close marker (see :func:`prompt_opens_span`).
            A close marker with no open marker before it means the same (R1 prompted without its template).

    Example:
        >>> toks = ["<|channel|>", "analysis", "<|message|>", "hm", "m", "<|end|>", "<|start|>", "assistant",
        ...         "<|channel|>", "final", "<|message|>", "4", "2"]
        >>> s = split_thinking(toks, SPANS["harmony"])
        >>> s.parts(toks), s.closed
        ((['hm', 'm'], ['4', '2']), True)
        >>> split_thinking("just 42", SPANS["think"]).parts("just 42")
        ('', 'just 42')
    """
    is_text = isinstance(output, str)
    if not is_text and any(not isinstance(t, str) for t in output):
        raise ThinklensError.of("output", type(output).__name__, "a text or a list of token strings",
                                "decode the token ids first (tokenizer.convert_ids_to_tokens or Trace.tokens)")
    text = output if is_text else "".join(output)
    n = len(text) if is_text else len(output)
    found = _char_split(text, span, opened) if span is not None else None
    if found is None:
        return ThinkingSplit.no_span(n)
    r0, r1, a0, closed = found
    if is_text:
        return ThinkingSplit(range(r0, r1), range(a0, len(text)), closed)
    offsets = []  # (first char, end char) of each token in the joined text
    pos = 0
    for t in output:
        offsets.append((pos, pos + len(t)))
        pos += len(t)
    inside = [i for i, (s, e) in enumerate(offsets) if s >= r0 and e <= r1 and e > s]
    after = [i for i, (s, e) in enumerate(offsets) if s >= a0 and e > s]
    reasoning = range(inside[0], inside[-1] + 1) if inside else range(0)
    answer = range(after[0], n) if after else range(n, n)
    return ThinkingSplit(reasoning, answer, closed)


def prompt_opens_span(prompt: str, span: ThinkingSpan | None) -> bool:
    """Whether a prompt ends inside the span (its last open marker is not closed after it).

    Example:
        >>> prompt_opens_span("<|im_start|>assistant\\n<think>\\n", SPANS["think"])
        True
        >>> prompt_opens_span("<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n", SPANS["think"])
        False
    """
    if span is None or not span.open:
        return span is not None
    at = prompt.rfind(span.open)
    return at >= 0 and prompt.find(span.close, at + len(span.open)) < 0


def detect_span(tokenizer: Any) -> ThinkingSpan | None:
    """The thinking span of a tokenizer's family, from its chat template and vocabulary (None: none known).

    The chat template is read first, then the vocabulary (a marker that is one token); in each, harmony
    (its analysis channel) before Magistral, EXAONE and ``<think>``.
    """
    template = getattr(tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):
        template = " ".join(str(v) for v in template.values())
    try:
        vocab = tokenizer.get_vocab()
    except (AttributeError, NotImplementedError):
        vocab = {}
    markers = (("harmony", "<|channel|>"), ("magistral", "[THINK]"), ("exaone", "<thought>"), ("think", "<think>"))
    for where in (template, vocab):  # the template is the stronger evidence: vocabularies carry spare tokens
        for key, marker in markers:
            if marker in where:
                return SPANS[key]
    return None


@dataclass(frozen=True)
class PromptFormat:
    """How one model is prompted and where its reasoning and answer are.

    Build one with :func:`format_for` (it reads the model's tokenizer); the fields are plain data, so a
    format can be written to a run's config and compared.
    """

    name: str
    """The prompt format: chat, plain, direct, cot or think."""
    span: ThinkingSpan | None = None
    """The model's thinking-span markers (None: it has none)."""
    instruction: str = R1_INSTRUCTION
    """chat: the line appended to the problem in the user turn ("" for none)."""
    system: str | None = None
    """chat: a system message (gpt-oss reads ``Reasoning: low/medium/high`` there)."""
    template_kwargs: tuple[tuple[str, Any], ...] = ()
    """chat: extra keywords of ``apply_chat_template``, e.g. ``(("enable_thinking", True),)`` for Qwen3."""

    def __post_init__(self) -> None:
        if self.name not in PROMPT_FORMATS or self.name == "auto":
            raise ThinklensError.of("prompt format", self.name, f"one of {', '.join(PROMPT_FORMATS[1:])}",
                                    did_you_mean(self.name, PROMPT_FORMATS[1:]) or "resolve auto with format_for")

    @property
    def kind(self) -> str:
        """Deprecated: :attr:`name` (the prompt format has one name)."""
        warnings.warn("PromptFormat.kind is deprecated; use PromptFormat.name", DeprecationWarning, stacklevel=2)
        return self.name

    @property
    def is_zoo(self) -> bool:
        """A zoo style (the zoo's spaced word prompts and ``####`` answers)."""
        return self.name in ZOO_FORMATS

    # ---- answer cues ------------------------------------------------------------------------
    @property
    def lynx_exit(self) -> str:
        """Appended to a prefix cut at a cue word to force an answer (LYNX): the span's close, then
        ``Final Answer: \\boxed{``; the zoo's ``####`` (after ``</think>`` in think traces)."""
        if self.is_zoo:
            return "</think> ####" if self.name == "think" else ZOO_CUE
        if self.span is None:
            return LYNX_ANSWER
        if self.span.exit_open:
            return f"{self.span.close}{self.span.exit_open}{LYNX_ANSWER.lstrip()}"
        return f"{self.span.close}{LYNX_ANSWER}"

    @property
    def ttts_cue(self) -> str:
        """Text that asks for the final answer after a trace (TTTS)."""
        return ZOO_CUE if self.is_zoo else TTTS_CUE

    @property
    def ttts_tokens(self) -> int:
        """Tokens decoded after :attr:`ttts_cue` to read the answer."""
        return ZOO_CUE_TOKENS if self.is_zoo else TTTS_TOKENS

    # ---- prompts ----------------------------------------------------------------------------
    def user_message(self, question: str) -> str:
        """The user turn of a chat prompt: the problem, then the instruction on its own line."""
        return f"{question}\n{self.instruction}" if self.instruction else question

    def render(self, problem: Any, tokenizer: Any = None) -> str:
        """The prompt for one problem: a :class:`~thinklens.tasks.Problem`, a problem set's
        :class:`~thinklens.data.problemsets.RealProblem` (a zoo style renders its ground truth where it has one, any
        other format its question) or a question string.

        ``tokenizer`` is needed for ``chat`` (its ``apply_chat_template``); a format from :func:`format_for`
        holds its model's tokenizer, so ``format_for(model).render(q)`` needs none.
        """
        tokenizer = tokenizer if tokenizer is not None else getattr(self, "_tokenizer", None)
        if hasattr(problem, "ground_truth") and hasattr(problem, "question"):  # a problem set's RealProblem
            problem = problem.ground_truth if self.is_zoo and problem.ground_truth is not None else problem.question

        question = problem.question if isinstance(problem, Problem) else problem
        if not isinstance(question, str) or not question.strip():
            raise ThinklensError.of("problem", repr(problem)[:80], "a Problem or a non-empty question string",
                                    "check the data set's question field")
        if self.is_zoo:
            return render_prompt(problem, self.name) if isinstance(problem, Problem) else f"{spaced(question)} {CUES[self.name]}"
        if self.name == "plain":
            return question
        if tokenizer is None or not getattr(tokenizer, "chat_template", None):
            raise ThinklensError.of("chat format", "a tokenizer without a chat template", "a tokenizer with one",
                                    f"pass {opt('prompt_format', 'plain')}, or a model whose tokenizer ships a chat template")
        messages = ([{"role": "system", "content": self.system}] if self.system else [])
        messages.append({"role": "user", "content": self.user_message(question)})
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                             **dict(self.template_kwargs))

    def render_all(self, problems: Sequence[Any], tokenizer: Any = None) -> list[str]:
        """:meth:`render` for each problem."""
        return [self.render(p, tokenizer) for p in problems]

    def render_problems(self, problems: Iterable[Any], tokenizer: Any = None) -> list[str]:
        """The prompts of problems of a problem set (:class:`~thinklens.data.problemsets.RealProblem`, or the synthetic
        task's :class:`~thinklens.tasks.Problem`): a zoo style renders a synthetic problem's own zoo prompt (from
        its ground truth, whose values the zoo's renderings align to); any other format renders the question (a
        chat format adds the instruction and the template).

        Example:
            >>> from thinklens.data.problemsets import ProblemSet, RealProblem
            >>> ps = [*ProblemSet.synthetic(1, seed=0, min_steps=2, max_steps=2), RealProblem("r", "What is 2+2?", "4")]
            >>> [p.endswith("<think>") for p in PromptFormat("think").render_problems(ps)]
            [True, True]
            >>> PromptFormat("plain").render_problems(ps)[1]
            'What is 2+2?'
        """
        problems = list(problems)  # a ProblemSet, a list of problems, a split's part
        if not problems:
            raise ThinklensError.of("problems", 0, "at least one problem", "pass more data or a larger count")
        return self.render_all(problems, tokenizer)

    def opens_span(self, prompt: str) -> bool:
        """Whether outputs to ``prompt`` start inside the thinking span."""
        return prompt_opens_span(prompt, self.span)

    def split(self, output: str | Sequence[str], prompt: str) -> ThinkingSplit:
        """:func:`split_thinking` of an output generated after ``prompt`` in this format."""
        return split_thinking(output, self.span, opened=self.opens_span(prompt))

    def split_trace(self, trace: Any) -> ThinkingSplit:
        """The split of a :class:`~thinklens.generation.trace.Trace`'s generated tokens (token indices).

        Tokens rather than ``trace.text``: the text is decoded without special tokens, and some families'
        markers are special tokens (harmony's channels, Magistral's ``[THINK]``).
        """
        return self.split(list(trace.tokens), trace.prompt)


def check_format(name: str) -> str:
    """``name`` if it is a prompt format, else a did-you-mean :class:`ThinklensError`."""
    if name not in PROMPT_FORMATS:
        raise ThinklensError.of("prompt format", name, f"one of {', '.join(PROMPT_FORMATS)}",
                                did_you_mean(name, PROMPT_FORMATS) or f"pass {opt('prompt_format', 'auto')}")
    return name


def zoo_prompt_format(name_or_path: str) -> str | None:
    """The format a zoo model answers in (its zoo.json's ``prompt_format``, else its zoo style), or None
    for a model that is not from the zoo."""
    meta = zoo_meta(name_or_path)
    if not meta:
        return None
    declared = meta.get("prompt_format") or (meta.get("recipe") or {}).get("prompt_format")
    return check_format(declared) if declared else model_style(name_or_path)


def format_for(model: Any, prompt_format: str = "auto", *, tokenizer: Any = None, **fields: Any) -> PromptFormat:
    """The prompt format of a model: ``prompt_format`` (auto, chat, plain, direct, cot, think) resolved with its
    tokenizer, the span detected from it.

    The format keeps the tokenizer (outside its fields: not compared, not written to a config, dropped by
    ``dataclasses.replace``), so ``format_for(model).render(q)`` is the model's own chat template.

    Args:
        model: a :class:`~thinklens.engine.model.HookedModel` (its ``name`` and ``tokenizer``), or a model name
            or folder with ``tokenizer`` given.
        prompt_format: the ``--prompt-format`` choice (``kind=``, its former name, still works with a warning).
        fields: overrides of :class:`PromptFormat` fields (instruction, system, template_kwargs).

    Example:
        >>> format_for("tiny-think", tokenizer=None).name  # doctest: +SKIP
        'think'
    """
    if "kind" in fields:  # the keyword's name before the prompt format had one name

        warnings.warn("format_for(kind=...) is deprecated; use format_for(prompt_format=...)", DeprecationWarning,
                      stacklevel=2)
        prompt_format = fields.pop("kind")
    name = str(getattr(model, "name", model))
    tok = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
    prompt_format = check_format(prompt_format)
    if prompt_format == "auto":
        has_template = bool(getattr(tok, "chat_template", None))
        prompt_format = zoo_prompt_format(name) or ("chat" if has_template else "plain")
    if prompt_format in ZOO_FORMATS:
        span = ZOO_THINK_SPAN if prompt_format == "think" else ZOO_COT_SPAN if prompt_format == "cot" else None
    else:
        span = detect_span(tok) if tok is not None else None
    fmt = PromptFormat(prompt_format, span=fields.pop("span", span), **fields)
    object.__setattr__(fmt, "_tokenizer", tok)  # frozen: bound once here, never a field
    return fmt


def token_separator(tokenizer: Any, ids: Sequence[int]) -> str:
    """``" "`` when a tokenizer's per-token strings join to its decoded text with spaces (word-level
    tokenizers such as the zoo's), else ``""`` (BPE pieces carry their own spaces).

    Analyses that find words on the text of a token list join the tokens with this separator, so word
    boundaries are the model's own.
    """
    ids = list(ids)
    if len(ids) < 2:
        return ""
    pieces = [tokenizer.decode([i]) for i in ids]
    text = tokenizer.decode(ids)
    return " " if "".join(pieces) != text and " ".join(pieces) == text else ""

