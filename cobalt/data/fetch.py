"""The paper's data by command: ``bash scripts/fetch_paper_data.sh [--released] [--out DIR]``.

Downloads from the Hugging Face hub, with the venv's ``huggingface_hub`` (docs/paper.md, "The data"):

- TACO-verified: ``taco_verified.json`` of the dataset ``likaixin/TACO-verified`` (one JSON array,
  about 12.9k problems, 1.9 GB), read by the chain as it ships;
- LiveCodeBench: ``test6.jsonl`` of ``livecodebench/code_generation_lite`` (the problems release_v6
  added; private tests compressed);
- with ``--released``, instead of TACO-verified: the authors' processed training set
  (``osunlp/TACO-Cobalt``, its data files whose names say ``train``) and their perturbed dev set
  (``osunlp/TACO-Cobalt-PTB``), each written as one JSONL file.

Every row of every file is checked for the fields the chain reads (reference section 6; problem
records for the released files), its rows are counted, and the ``reproduce_paper.sh`` command with
the flags to pass is printed. ``--from DIR`` reads a local copy laid out as the hub's repositories
(``DIR/<owner>/<name>/<file>``) instead of the hub.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import os
import shlex
import shutil
import sys
from pathlib import Path

from cobalt.common.cli import ArgumentParser
from cobalt.common.errors import DataError
from cobalt.data.sources import SHAPES, iter_local

ROOT = Path(__file__).resolve().parents[2]
DATA_FILES = ("*.jsonl", "*.json", "*.parquet")


@dataclasses.dataclass(frozen=True)
class Source:
    flag: str  # the reproduce_paper.sh flag it is passed as
    repo: str  # the hub dataset
    patterns: tuple[str, ...]  # its files to fetch
    fields: tuple[str, ...]  # required in every row
    keep: str = ""  # of the fetched files, those whose path contains this (case-insensitive)
    jsonl: str | None = None  # written as this one JSONL file (released data may ship otherwise)


TACO = Source("--taco", "likaixin/TACO-verified", ("taco_verified.json",),
              ("id", "question", "solutions", "input_output", "source", "difficulty"))  # fmt: skip
LCB = Source("--lcb", "livecodebench/code_generation_lite", ("test6.jsonl",), SHAPES["lcb"])
RELEASED_TRAIN = Source("--taco", "osunlp/TACO-Cobalt", DATA_FILES, SHAPES["problems"], keep="train",
                        jsonl="taco_cobalt_train.jsonl")  # fmt: skip
RELEASED_DEV = Source("--taco-dev", "osunlp/TACO-Cobalt-PTB", DATA_FILES,
                      (*SHAPES["problems"], "perturbed_public_test_cases"), jsonl="taco_cobalt_ptb.jsonl")  # fmt: skip


def download(source: Source, out: Path, local: Path | None) -> list[Path]:
    """The source's files under ``out/<repo>/``, from the hub or from ``local/<repo>/``."""
    dest = out / source.repo
    if local is not None:
        repo = local / source.repo
        if not repo.is_dir():
            raise DataError(f"no {source.repo} here (expected the hub's layout: {repo}/<file>)", path=local)
        for path in sorted(p for p in repo.rglob("*") if p.is_file()):
            name = path.relative_to(repo).as_posix()
            if any(fnmatch.fnmatch(name, pattern) for pattern in source.patterns):
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest / name)
    else:
        from huggingface_hub import snapshot_download

        try:
            snapshot_download(
                source.repo, repo_type="dataset", local_dir=dest, allow_patterns=list(source.patterns)
            )
        except Exception as e:  # no network, no access, no such repository
            reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            raise DataError(f"cannot download from the hub ({reason}); check the network and HF_TOKEN, "
                            "or pass --from DIR", path=f"hf://datasets/{source.repo}") from None  # fmt: skip
    files = sorted(p for p in dest.rglob("*") if p.is_file() and ".cache" not in p.parts
                   and any(fnmatch.fnmatch(p.name, pattern) for pattern in source.patterns)
                   and source.keep.lower() in p.relative_to(dest).as_posix().lower())  # fmt: skip
    if not files:
        raise DataError(f"no file of {', '.join(source.patterns)}"
                        + (f" named *{source.keep}*" if source.keep else "") + f" in {source.repo}", path=dest)  # fmt: skip
    return files


def checked(source: Source, files: list[Path], out: Path) -> tuple[Path, int]:
    """The file to pass (the one fetched, or the files' rows as one JSONL) and its rows, each row
    checked for the source's fields (an error names the file, row and field)."""
    if source.jsonl is None:
        if len(files) != 1:
            raise DataError(f"expected one file, got {', '.join(map(str, files))}", path=out / source.repo)
        rows = sum(1 for _ in iter_local(files[0], source.fields))
        target = files[0]
    else:
        from cobalt.common.jsonl import write_jsonl

        target = out / source.jsonl
        records = (record for path in files for _, record in iter_local(path, source.fields))
        rows = write_jsonl(target, records, overwrite=True)
    if rows == 0:
        raise DataError(f"no rows (from {source.repo})", path=target)
    return target, rows


def reproduce_command(flags: list[str]) -> str:
    script = ROOT / "scripts/reproduce_paper.sh"
    shown = os.path.relpath(script) if Path.cwd().resolve() == ROOT else str(script)
    words = ["bash", shown, "--profile", "multi_turn_qwen3_8b", *flags, "--model", "DIR", "--dry-run"]
    return " ".join(shlex.quote(word) for word in words)


def main(argv=None) -> int:
    p = ArgumentParser(prog="bash scripts/fetch_paper_data.sh", description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument(
        "--out", default=str(ROOT / "data/paper"), help="where the files go (default: data/paper/)"
    )
    p.add_argument("--from", dest="local", default=None, help="a local copy in the hub's layout "
                   "(DIR/<owner>/<name>/<file>) to read instead of the hub")  # fmt: skip
    p.add_argument("--released", action="store_true", help="the authors' processed train (osunlp/TACO-Cobalt) "
                   "and perturbed dev (osunlp/TACO-Cobalt-PTB) instead of TACO-verified")  # fmt: skip
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    local = Path(args.local).resolve() if args.local else None
    sources = [RELEASED_TRAIN, RELEASED_DEV, LCB] if args.released else [TACO, LCB]
    flags = []
    try:
        for source in sources:
            print(f"[fetch] {source.repo} ({'local copy ' + str(local) if local else 'hub'})", flush=True)
            path, rows = checked(source, download(source, out, local), out)
            print(f"[fetch] {path}: {rows:,} rows, each with {', '.join(source.fields)}", flush=True)
            flags += [source.flag, str(path)]
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(
        "[fetch] done; the dry run, DIR the base model's directory (hf download Qwen/Qwen3-8B --local-dir DIR), "
        "then the same without --dry-run:"
    )
    print(reproduce_command(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
