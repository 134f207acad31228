"""The benchmarks: each module prints ``name=value`` lines, its headline last, and runs from the repository's root
as ``python -m bench.<name>`` (``make bench`` runs them all); ``bench._common`` and ``bench._targets`` are their
shared helpers, ``bench.gpu`` the device benchmark (``bash bench/gpu/run.sh``)."""

__all__: list[str] = []
