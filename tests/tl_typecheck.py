"""The runtime shape checker used under pytest (jaxtyping + beartype); a module of its own so any conftest can stay."""

from beartype import BeartypeConf, beartype

# ints are fine where a float is annotated (PEP 484 numeric tower), as for users outside pytest
typechecker = beartype(conf=BeartypeConf(is_pep484_tower=True))
