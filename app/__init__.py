"""The Streamlit app over run folders: ``Home.py`` and ``pages/`` are the scripts Streamlit runs, and the modules here
are what they import, as ``app.<module>`` (``thinklens app`` serves it with the checkout's root on ``PYTHONPATH``).

- ``common``: the runs root, run pickers, cards and figures every page shows
- ``dashboard``: the home page's rows (status, headline, age, the commands to run next)
- ``compare``, ``run_diff``: comparisons of runs of one kind, and the diff of two runs' traces
- ``evidence``: the traces behind a run's numbers
- ``exports``: charts and tables with their downloads
- ``features``, ``feature_views``: the SAE feature browser (logic, then its widgets)
- ``traces``: the token-level trace viewer's logic, beside ``trace_records``, ``trace_links``, ``trace_display``,
  ``trace_lens`` and ``run_refs``; ``trace_views`` with ``anchor_views`` and ``lens_views`` (thought-anchors and
  tuned-lens runs, recognised by their results) and ``trace_match`` (the same trace in other runs)
- ``background``: model work run off the page's thread
- ``validation_table``: the validation table as the app shows it
"""

__all__ = ["anchor_views", "background", "common", "compare", "dashboard", "evidence", "exports", "feature_views",
           "features", "lens_views", "run_diff", "run_refs", "trace_display", "trace_lens", "trace_links", "trace_match",
           "trace_records", "trace_views", "traces", "validation_table"]
