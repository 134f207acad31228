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
