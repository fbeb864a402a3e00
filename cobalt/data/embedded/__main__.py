"""``python -m cobalt.data.embedded --out DIR``: write the embedded problems as raw TACO and
LiveCodeBench JSONL files."""

from __future__ import annotations

import argparse
import sys

from cobalt.data.embedded import LCB_FILE, TACO_FILE, write_raw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cobalt.data.embedded",
        description=f"Write the embedded problem set as {TACO_FILE} (raw TACO-verified shape) and "
        f"{LCB_FILE} (raw LiveCodeBench test6 shape).",
    )
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    args = parser.parse_args(argv)
    try:
        written = write_raw(args.out, overwrite=args.overwrite)
    except FileExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path, count in written.items():
        print(f"wrote {count} records to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
