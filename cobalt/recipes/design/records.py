"""A design's results kept in git (``python -m cobalt.design --keep``).

A design's runs span sessions whose machines keep nothing: a run's directory (models, checkpoints,
trajectories) is gone with its session. What the analysis reads is small and is kept under
``records/`` in the run directories' own layout, so that ``python -m cobalt.design --report --root
records`` analyses every run kept so far: each done run's report (``report/report.json``, and
``report/report.md``, which marks it done), its start model's hash, its labels by behaviour (made
here from its trajectories when missing), each done repair run's file without its responses' text
(the analysis reads each sample's verdict) with its summary, and the pilot's evaluations as each
problem's pass-rate grid (``python -m cobalt.design --pilot --root records``). A kept file is never
overwritten with other content.
"""

from __future__ import annotations

import json
from pathlib import Path

from cobalt.common import rundir

RECORDS = "records"  # under the checkout: python -m cobalt.design --report --root records
RUN_FILES = (rundir.REPORT_JSON, rundir.REPORT_MD, rundir.START)


def without_responses(line: str) -> str:
    """A repair record without its samples' text (``arms.<arm>.responses``)."""
    record = json.loads(line)
    for arm in record.get("arms", {}).values():
        arm.pop("responses", None)
    return json.dumps(record) + "\n"


def _put(source: Path, target: Path, text: str | None = None) -> bool:
    """Copy ``source`` (or write ``text``) to ``target``; False when the same is there already;
    FileExistsError when another content is."""
    content = source.read_bytes() if text is None else text.encode()
    if target.exists():
        if target.read_bytes() == content:
            return False
        raise FileExistsError(f"{target} is kept already with other content than {source}; not overwritten")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(content)
    tmp.replace(target)
    return True


def keep(design: dict, runs: list[dict], root: str | Path = ".", records: str | Path = RECORDS) -> list[Path]:
    """Keep the analysis files of every done run of ``runs`` (the design's plan's) under
    ``records``; the files written."""
    from cobalt.eval.repair_run import summary_path
    from cobalt.recipes.design.report_ft import LABELS, labels_of

    root, written = Path(root), []
    for run in runs:
        if not run["done"]:
            continue
        source = Path(run["run_dir"])
        target = Path(records) / source.resolve().relative_to(root.resolve())
        if run["arm"] == "repair":
            output = source / "repair.jsonl"
            text = "".join(
                without_responses(line) for line in output.read_text().splitlines() if line.strip()
            )
            pairs = [
                (output, target / output.name, text),
                (summary_path(output), target / summary_path(output).name, None),
            ]
        else:
            if run["arm"] == "cobalt" and "arms" in design:
                labels_of(source)  # made from the run's trajectories while they exist
            names = (*RUN_FILES, LABELS) if (source / LABELS).exists() else RUN_FILES
            pairs = [(source / name, target / name, None) for name in names if (source / name).exists()]
        written += [t for s, t, text in pairs if _put(s, t, text)]
    return written + keep_pilot(design, root, records)


def keep_pilot(design: dict, root: Path, records: str | Path) -> list[Path]:
    """The pilot's evaluation files as ``{id, all_pass_rates}`` lines (what its dose curve reads)."""
    if not design.get("pilot"):
        return []
    from cobalt.recipes.design.pilot import pilot_runs

    written = []
    for run_dir in pilot_runs(design, root).values():
        for source in sorted(run_dir.glob("eval_*/eval.jsonl")) if run_dir.is_dir() else []:
            lines = (json.loads(line) for line in source.read_text().splitlines() if line.strip())
            text = "".join(
                json.dumps({"id": r["id"], "all_pass_rates": r["all_pass_rates"]}) + "\n" for r in lines
            )
            target = Path(records) / source.resolve().relative_to(root.resolve())
            written += [target] if _put(source, target, text) else []
    return written
