"""Links into the token-level trace viewer, the one convention every page builds its URLs with (:func:`trace_link`):
``/Trace_viewer?run=<run folder relative to the runs root>&trace=<trace id>&quantity=<name>`` with optional
``&token=<position>`` and ``&highlight=<word>``; and the names of the SAE-feature quantities.

Example:
    >>> trace_link("lynx/demo", "12", "probe", token=30)
    '/Trace_viewer?run=lynx/demo&trace=12&quantity=probe&token=30'
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from thinklens.errors import ThinklensError

VIEWER_PATH = "/Trace_viewer"


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
