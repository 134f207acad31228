"""The steering package's jobs (``thinklens run sae|sae-eval|steer|reasoning-vector|hybrid|grpo``), one file each,
registered in pyproject.toml's ``thinklens.jobs`` entry points."""
