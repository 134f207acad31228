"""Architecture families: capture parity, generate parity and interventions on a tiny random model of each.

Each family's model (2 blocks; 4 for the hybrid and recurrent families of ``HYBRID_FAMILIES``, so that attention
and non-attention token mixers both occur; built from its config, saved and loaded through HookedModel.load with
its parity self-check) runs the oracle checks of tools/testing.py; a family refused at load counts as failed
and prints its one-line reason. ``--hybrid`` runs the hybrid table only, ``--threads N`` limits torch's threads. Prints one line per family
(``family_<model_type>=capture:ok,generate:ok,interventions:ok``, a failed check as ``<check>:fail``
followed by a ``family_<model_type>_error=`` line), where its adapter came from, and the headline
``families_ok=N/M`` (families passing every check).
"""

from __future__ import annotations

import argparse
import tempfile
import warnings

import torch

from tools.testing import HYBRID_FAMILIES, TINY_FAMILIES, check_family


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--hybrid", action="store_true", help="the hybrid and recurrent families only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)  # the kernels' "falling back to PyTorch" notices
    families = HYBRID_FAMILIES if args.hybrid else TINY_FAMILIES + HYBRID_FAMILIES
    n_ok = 0
    with tempfile.TemporaryDirectory(prefix="bench-families-") as root:
        for family in families:
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
    print(f"families_ok={n_ok}/{len(families)}")


if __name__ == "__main__":
    main()
