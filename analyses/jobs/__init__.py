"""The analyses' jobs, one file each, registered in pyproject.toml's ``thinklens.jobs`` entry points."""
