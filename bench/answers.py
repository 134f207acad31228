"""Answer grading: agreement with math-verify's own test cases, and the cost of GSM8K's unit answers.

Prints name=value lines; last: answers_agreement= (on the cases whose prediction has a box or an answer
marker, default options; must stay >= 0.97 with answers_false_positives=0). The fixture is
tests/fixtures/math_verify_cases.json (math-verify's test cases, with where each comes from).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from thinklens.calibration.stats import wilson
from thinklens.data.answers import is_correct
from thinklens.data.equivalence import math_equal
from thinklens.data.grading import agreement, load_cases

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "math_verify_cases.json"

# GSM8K answers written with a unit, each formatted with the integer answer; the first is the slow one.
UNIT_FORMS = {
    "text_dollars": r"so she earns \boxed{{{n} \text{{ dollars}}}}",
    "dollar_sign": r"so she earns \boxed{{\${n}}}",
    "plain_words": r"so she earns \boxed{{{n} dollars}}",
    "text_inside": r"so she earns \boxed{{\text{{{n} apples}}}}",
    "thin_space_unit": r"so she earns \boxed{{{n}\,\mathrm{{cm}}}}",
}


def _ms_per_comparison(form: str, golds: list[int]) -> float:
    """Mean ms of is_correct over distinct (text, gold) pairs, half right and half wrong (no cache hits)."""
    start = time.perf_counter()
    for k, gold in enumerate(golds):
        text = form.format(n=gold if k % 2 == 0 else gold + 1)
        if is_correct(text, gold) is not (k % 2 == 0):
            raise RuntimeError(f"graded {text!r} against {gold} as {k % 2 == 1}; expected {k % 2 == 0}")
    return (time.perf_counter() - start) * 1000 / len(golds)


def main(n_pairs: int = 200) -> None:
    cases = load_cases(FIXTURE)
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]
    direct = sum(c["math_verify"]["own_options"] == c["expected"] for c in recorded)
    direct_defaults = sum(c["math_verify"]["defaults"] == c["expected"] for c in recorded)
    print(f"answers_cases={len(cases)}")
    print(f"math_verify_recorded_agreement={direct}/{len(cases)} (each test's own options)")
    print(f"math_verify_recorded_agreement_defaults={direct_defaults}/{len(cases)} (parse/verify defaults)")
    every = agreement(cases, unstated="wrong")
    print(f"answers_all_agreement={every.n_agree}/{every.n} (no box or marker: no answer, graded wrong)")
    bare = agreement(cases, unstated="bare")
    print(f"answers_bare_agreement={bare.n_agree}/{bare.n} (no box or marker: the text as a bare answer)")
    print(f"answers_bare_false_positives={len(bare.false_positives)}")
    last = agreement(cases, boxes="last")
    print(f"answers_agreement_boxes_last={last.n_agree}/{last.n} (the old last-box policy)")

    math_equal("1", "1")  # start the math-verify worker outside the timings
    golds = list(range(1000, 1000 + n_pairs))
    for name, form in UNIT_FORMS.items():
        print(f"gsm8k_unit_{name}_ms={_ms_per_comparison(form, golds):.3f}")
    slow = golds[: n_pairs // 4]
    start = time.perf_counter()
    for gold in slow:
        math_equal(str(gold), rf"{gold} \text{{ dollars}}")
    print(f"gsm8k_unit_text_dollars_math_verify_ms={(time.perf_counter() - start) * 1000 / len(slow):.1f} (the path before)")

    stated = agreement(cases)
    lo, hi = wilson(stated.n_agree, stated.n)
    print(f"answers_agreement_n={stated.n_agree}/{stated.n} (Wilson 95% {lo:.3f}-{hi:.3f})")
    print(f"answers_false_positives={len(stated.false_positives)}")
    print(f"answers_agreement={stated.rate:.3f}")


if __name__ == "__main__":
    main()
