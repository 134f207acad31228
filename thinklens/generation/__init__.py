"""Generation: traced, KV-cached, batched decoding.

- ``generate``: :func:`generate` and its traces (the entry point)
- ``decode_loop``: the one decode loop, with a pluggable token choice
- ``kv_batch``: the KV-cached state of one decoding batch, and the one left-padder
- ``presized_cache``: KV cache layers pre-sized from the budget (no ``torch.cat`` per step)
- ``budgets``: how many new tokens a prompt gets, inside the model's context
- ``trace``: :class:`Trace` and :class:`ActivationBatch`, and a trace's JSON form
"""
