"""Hypothesis profile for the fuzz tests: derandomized (the same examples on every CI run, so a failure is
reproducible and never flaky). Set ``FUZZ_RANDOM=1`` to explore with fresh random examples locally."""

import os

from hypothesis import settings

settings.register_profile("fuzz-ci", derandomize=True, print_blob=True)
settings.register_profile("fuzz-random", print_blob=True)
settings.load_profile("fuzz-random" if os.environ.get("FUZZ_RANDOM") else "fuzz-ci")
