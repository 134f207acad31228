"""The device benchmark, ``python -m bench.gpu.bench_gpu``, run on a machine with an accelerator by
``bash bench/gpu/run.sh``."""

__all__: list[str] = []
