"""Repository tools, not part of the installed package: the demo (``make demo``), the README's results
blocks (``python -m tools.readme_results``) and tiny random models for the tests and benches."""
