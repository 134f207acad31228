"""``python -m thinklens``: the ``thinklens`` command, from an install or from a checkout (``PYTHONPATH=.``)."""

from thinklens.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
