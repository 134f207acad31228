"""The token-level trace viewer's logic, testable without Streamlit: links into the viewer, the traces a run
holds, and the per-token quantities that colour them.

The link convention (every page that links to the viewer builds its URL with ``trace_link``):
``/Trace_viewer?run=<run folder relative to the runs root>&trace=<trace id>&quantity=<name>``
with optional ``&token=<position>`` and ``&highlight=<word>``.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

VIEWER_PATH = "/Trace_viewer"


def trace_link(run: str, trace: str, quantity: str, token: int | None = None,
               highlight: str | None = None) -> str:
    """The relative URL of the trace viewer showing ``trace`` of ``run`` coloured by ``quantity``.

    Args:
        run: the run folder relative to the runs root, e.g. ``"mi-peaks/20260101-abc"``.
        trace: the trace id within the run (as the run's results name it).
        quantity: the per-token quantity to colour by (e.g. ``"mi"``, ``"entropy"``).
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
