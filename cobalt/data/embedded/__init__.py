"""The embedded problem set (``problems.json``): stdin/stdout problems written for COBALT, the
default data offline; ``easy_problems.json``: very simple ones for a small model (``--set easy``). Logic in ``problems.py``; ``python -m cobalt.data.embedded --out DIR``
writes them as raw TACO and LiveCodeBench rows."""

from cobalt.data.embedded.problems import (
    EASY_PROBLEMS_PATH,
    LCB_FILE,
    PROBLEM_SETS,
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
    "EASY_PROBLEMS_PATH",
    "LCB_FILE",
    "PROBLEMS_PATH",
    "PROBLEM_SETS",
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
