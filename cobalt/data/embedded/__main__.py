"""``python -m cobalt.data.embedded --out DIR [--set easy]``: write the embedded problems as raw
TACO and LiveCodeBench JSONL files."""

from __future__ import annotations

import sys

from cobalt.common.cli import ArgumentParser
from cobalt.data.embedded import LCB_FILE, PROBLEM_SETS, TACO_FILE, write_raw


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="python -m cobalt.data.embedded",
        description=f"Write the embedded problem set as {TACO_FILE} (raw TACO-verified shape) and "
        f"{LCB_FILE} (raw LiveCodeBench test6 shape); --set easy writes the easy set as "
        "*_embedded_easy.jsonl.",
    )
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    parser.add_argument(
        "--set",
        choices=("default", "easy"),
        default="default",
        help="easy: the very simple problems of the learn profile (easy_problems.json)",
    )
    args = parser.parse_args(argv)
    path = PROBLEM_SETS["embedded_easy" if args.set == "easy" else "embedded"]
    try:
        written = write_raw(args.out, overwrite=args.overwrite, path=path)
    except FileExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path, count in written.items():
        print(f"wrote {count} records to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
