"""User-facing errors.

Every error a user can cause says what was received, what was expected and how to fix it.
The CLI turns a :class:`ThinklensError` into one line on stderr and exit code 2.

Example:
    >>> raise ThinklensError.of("site", "resid_pst.3", "a site like resid_post.3", "check `thinklens info MODEL`")
    Traceback (most recent call last):
    ...
    thinklens.errors.ThinklensError: bad site: received 'resid_pst.3'; expected a site like resid_post.3; fix: check `thinklens info MODEL`
"""

from __future__ import annotations


class ThinklensError(ValueError):
    """An error caused by user input; the message is complete and printable as one line."""

    @classmethod
    def of(cls, what: str, received: object, expected: str, fix: str) -> "ThinklensError":
        """Build the standard three-part message."""
        return cls(f"bad {what}: received {received!r}; expected {expected}; fix: {fix}")


def did_you_mean(word: str, choices: "list[str] | tuple[str, ...]") -> str:
    """A fix hint: the closest choice, else the list of choices.

    Example:
        >>> did_you_mean("lnyx", ["lynx", "probe"])
        "did you mean 'lynx'?"
    """
    import difflib

    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"did you mean {close[0]!r}?" if close else f"choose one of {', '.join(choices)}"
