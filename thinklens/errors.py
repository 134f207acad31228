"""User-facing errors, in the caller's terms.

Every error a user can cause says what was received, what was expected and how to fix it.
The CLI turns a :class:`ThinklensError` into one line on stderr and exit code 2.

A fix that names an option names it as the caller writes it: :func:`opt` renders ``--allow-overlap``
while the CLI runs a job (it enters :func:`cli_terms`) and ``allow_overlap=`` from Python, so a CLI user
is never told to ``pass allow_overlap=True`` nor a notebook user to ``pass --prompt-format plain``.

Example:
    >>> raise ThinklensError.of("site", "resid_pst.3", "a site like resid_post.3", "check `thinklens info MODEL`")
    Traceback (most recent call last):
    ...
    thinklens.errors.ThinklensError: bad site: received 'resid_pst.3'; expected a site like resid_post.3; fix: check `thinklens info MODEL`
    >>> f"pass {opt('allow_overlap', True)}"
    'pass allow_overlap=True'
    >>> with cli_terms():
    ...     f"pass {opt('allow_overlap', True)}"
    'pass --allow-overlap'
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
from collections.abc import Iterator

_CLI_TERMS: contextvars.ContextVar[bool] = contextvars.ContextVar("thinklens_cli_terms", default=False)
_NO_VALUE = object()


class ThinklensError(ValueError):
    """An error caused by user input; the message is complete and printable as one line."""

    @classmethod
    def of(cls, what: str, received: object, expected: str, fix: str) -> "ThinklensError":
        """Build the standard three-part message."""
        return cls(f"bad {what}: received {received!r}; expected {expected}; fix: {fix}")


@contextlib.contextmanager
def cli_terms() -> Iterator[None]:
    """Within this block, :func:`opt` writes options as command-line flags (the CLI enters it to run a job)."""
    token = _CLI_TERMS.set(True)
    try:
        yield
    finally:
        _CLI_TERMS.reset(token)


def in_cli() -> bool:
    """Whether messages are being written for a command-line user (inside :func:`cli_terms`)."""
    return _CLI_TERMS.get()


def _cli_value(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_cli_value(v) for v in value)
    if value is None:
        return "none"
    return str(value)


def opt(name: str, value: object = _NO_VALUE) -> str:
    """An option as the caller writes it: the flag under the CLI, the keyword argument from Python.

    ``name`` is the config field (``allow_overlap``); with ``value`` the option is written with it. A value in angle
    brackets is a placeholder, written as it is in both terms (``--feature <N>``, ``feature=<N>``).

    Example:
        >>> opt("prompt_format"), opt("prompt_format", "plain"), opt("steps", (2, 3)), opt("skip_vacuous", False)
        ('prompt_format=', "prompt_format='plain'", 'steps=(2, 3)', 'skip_vacuous=False')
        >>> with cli_terms():
        ...     opt("prompt_format"), opt("prompt_format", "plain"), opt("steps", (2, 3)), opt("skip_vacuous", False)
        ('--prompt-format', '--prompt-format plain', '--steps 2,3', '--no-skip-vacuous')
        >>> opt("feature", "<N>"), opt_name("n_train")
        ('feature=<N>', 'n_train')
    """
    name = name.lstrip("-")
    placeholder = isinstance(value, str) and value.startswith("<") and value.endswith(">")
    if not in_cli():
        key = name.replace("-", "_")
        return f"{key}=" if value is _NO_VALUE else f"{key}={value if placeholder else repr(value)}"
    flag = "--" + name.replace("_", "-")
    if value is _NO_VALUE or value is True:
        return flag
    if value is False:
        return "--no-" + flag[2:]
    text = _cli_value(value)
    return f"{flag}={text}" if text.startswith("-") else f"{flag} {text}"  # --alphas=-1,0,1: argparse reads it whole


def opt_name(name: str) -> str:
    """An option's bare name as the caller knows it: ``--n-train`` under the CLI, ``n_train`` from Python.

    Example:
        >>> opt_name("n_train")
        'n_train'
    """
    name = name.lstrip("-")
    return "--" + name.replace("_", "-") if in_cli() else name.replace("-", "_")


def did_you_mean(word: str, choices: "list[str] | tuple[str, ...]") -> str:
    """A fix hint: the closest choice, else the list of choices.

    Example:
        >>> did_you_mean("lnyx", ["lynx", "probe"])
        "did you mean 'lynx'?"
    """
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"did you mean {close[0]!r}?" if close else f"choose one of {', '.join(choices)}"
