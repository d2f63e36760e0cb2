"""What the frequency test of the statistical invariants costs and catches (issue 20).

Prints, computed in one run:
1. the false-alarm rate each test is held to, when a certification's budget of 1e-6 is
   shared by --tests frequency tests;
2. for one item's weight off by a factor among N equal weights: the draws at which the test
   catches it with probability 0.999, exactly (the binomial tail), and the time a test of
   that many draws takes;
3. the failures of a conforming sampler (multinomial draws of the declared weights) over
   --runs tests at a rate of 1%, against the 1% allowed: the test is conservative.

Run from the repo root with the package installed: python benchmarks/bench_frequencies.py [--tests 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sampler_conformance.core.frequencies import (
    CERTIFICATION_FALSE_ALARM,
    FalseAlarmBudget,
    detection_power,
    draws_to_detect,
    frequency_test,
)

CASES = ((10, 2.0), (100, 2.0), (100, 0.5), (100, 1.5), (1000, 2.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=200, help="frequency tests sharing one certification's budget")
    parser.add_argument("--runs", type=int, default=20000, help="conforming tests run at a rate of 1%%")
    arguments = parser.parse_args()
    alpha = FalseAlarmBudget(tests=arguments.tests).per_test
    print(f"budget {CERTIFICATION_FALSE_ALARM:g} over {arguments.tests} tests: {alpha:.3g} per test")
    print("N      factor  draws for power 0.999  power there  one test's time")
    rng = np.random.default_rng(0)
    for items, factor in CASES:
        declared = 1.0 / items
        actual = factor / (items - 1 + factor)  # that item's weight times factor, the rest unchanged
        draws = draws_to_detect(declared, actual, items, alpha)
        probabilities = np.full(items, declared)
        counts = rng.multinomial(draws, probabilities)
        start = time.perf_counter()
        frequency_test(counts, probabilities, alpha)
        took = time.perf_counter() - start
        power = detection_power(draws, declared, actual, items, alpha)
        print(f"{items:<6} {factor:<7} {draws:<22} {power:<12.5f} {took * 1e3:.1f} ms")
    weights = np.arange(1, 21, dtype=float)
    probabilities = weights / weights.sum()
    failures = sum(
        frequency_test(rng.multinomial(2000, probabilities), probabilities, 0.01).fails for _ in range(arguments.runs)
    )
    print(
        f"conforming: {failures} of {arguments.runs} tests failed at a rate of 1% "
        f"({failures / arguments.runs:.4%} observed; 20 unequal weights, 2,000 draws each)"
    )


if __name__ == "__main__":
    main()
