"""Architecture families: capture parity, generate parity and interventions on a tiny random model of each.

Each family's model (2 blocks, built from its config, saved and loaded through HookedModel.load with its
parity self-check) runs the oracle checks of thinklens/testing.py. Prints one line per family
(``family_<model_type>=capture:ok,generate:ok,interventions:ok``, a failed check as ``<check>:fail``
followed by a ``family_<model_type>_error=`` line), where its adapter came from, and the headline
``families_ok=N/M`` (families passing every check).
"""

from __future__ import annotations

import tempfile
import warnings

import torch

from thinklens.testing import TINY_FAMILIES, check_family


def main() -> None:
    torch.set_num_threads(2)
    warnings.simplefilter("ignore")
    n_ok = 0
    with tempfile.TemporaryDirectory(prefix="bench-families-") as root:
        for family in TINY_FAMILIES:
            report = check_family(family, root)
            checks = ("capture", "generate", "interventions")
            line = ",".join(f"{c}:{'ok' if report.get(c) == 'ok' else 'fail'}" for c in checks)
            print(f"family_{family}={line}")
            errors = {c: report[c] for c in ("load", *checks) if report.get(c, "ok") != "ok"}
            if errors:
                print(f"family_{family}_error=" + "; ".join(f"{c}: {r}" for c, r in errors.items()))
            else:
                n_ok += 1
            print(f"family_{family}_adapter={report.get('adapter', 'none')}")
    print(f"families_ok={n_ok}/{len(TINY_FAMILIES)}")


if __name__ == "__main__":
    main()
