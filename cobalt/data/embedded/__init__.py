"""The embedded problem set (``problems.json``): stdin/stdout problems written for COBALT, the
default data offline. Logic in ``problems.py``; ``python -m cobalt.data.embedded --out DIR``
writes them as raw TACO and LiveCodeBench rows."""

from cobalt.data.embedded.problems import (
    LCB_FILE,
    PROBLEMS_PATH,
    SOURCE,
    TACO_FILE,
    all_tests,
    encode_private_tests,
    load_problems,
    problem_records,
    to_lcb_records,
    to_taco_records,
    write_raw,
)

__all__ = [
    "LCB_FILE",
    "PROBLEMS_PATH",
    "SOURCE",
    "TACO_FILE",
    "all_tests",
    "encode_private_tests",
    "load_problems",
    "problem_records",
    "to_lcb_records",
    "to_taco_records",
    "write_raw",
]
