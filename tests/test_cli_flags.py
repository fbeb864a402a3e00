"""The one flag style (cobalt.common.cli): long options are shown as ``--run-dir`` and accepted as
``--run-dir`` or ``--run_dir``, whichever form the CLI declares."""

from __future__ import annotations

import argparse

import pytest

from cobalt.common.cli import ArgumentParser, hyphenated


def parser(**kwargs) -> ArgumentParser:
    p = ArgumentParser(prog="tool", **kwargs)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--num_gpus", type=int, default=0)
    p.add_argument("--enable_thinking", action=argparse.BooleanOptionalAction, default=False)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--dry_run", action="store_true")
    group.add_argument("--max-problems", type=int)
    return p


@pytest.mark.parametrize(
    "argv",
    [
        ["--run-dir", "R", "--num-gpus", "2", "--dry-run"],
        ["--run_dir", "R", "--num_gpus", "2", "--dry_run"],
        ["--run_dir=R", "--num-gpus=2", "--dry_run"],
    ],
)
def test_both_spellings_set_the_same_dest(argv):
    args = parser().parse_args(argv)
    assert (args.run_dir, args.num_gpus, args.dry_run) == ("R", 2, True)


def test_a_negated_boolean_flag_accepts_both_spellings():
    assert parser().parse_args(["--run-dir", "R", "--no-enable-thinking"]).enable_thinking is False
    assert parser().parse_args(["--run-dir", "R", "--no_enable_thinking"]).enable_thinking is False
    assert parser().parse_args(["--run-dir", "R", "--enable_thinking"]).enable_thinking is True


def test_help_and_usage_show_each_option_once_hyphenated():
    p = parser()
    text = p.format_help()
    for option in ("--run-dir", "--num-gpus", "--dry-run", "--max-problems", "--no-enable-thinking"):
        assert option in text
    assert "_" not in " ".join(w for w in text.split() if w.startswith(("--", "[--")))
    assert text.count("--run-dir RUN_DIR") == 2  # once in usage, once in the options list
    assert "--num-gpus" in p.format_usage()


def test_a_typo_errors_naming_the_flag_as_typed(capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["--run_dir", "R", "--num_gpsu", "2"])
    assert exit_.value.code == 2
    assert "unrecognized option --num_gpsu; did you mean --num-gpus?" in capsys.readouterr().err


def test_a_typo_of_a_required_flag_is_named_with_the_nearest_not_reported_missing(capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["--rundir", "R"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized option --rundir; did you mean --run-dir?" in err and "required" not in err


def test_a_missing_required_flag_is_named_hyphenated(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args([])
    assert "required: --run-dir" in capsys.readouterr().err


def test_mutually_exclusive_options_conflict_under_either_spelling(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["--run-dir", "R", "--dry_run", "--max_problems", "3"])
    assert "not allowed with argument --dry-run" in capsys.readouterr().err


def test_abbreviations_follow_allow_abbrev(capsys):
    assert parser().parse_args(["--run_d", "R", "--num_g", "1"]).num_gpus == 1
    with pytest.raises(SystemExit):
        parser(allow_abbrev=False).parse_args(["--run-dir", "R", "--num_g", "1"])
    assert "unrecognized option --num_g" in capsys.readouterr().err


def test_tokens_after_double_dash_are_left_alone():
    p = ArgumentParser(prog="tool")
    p.add_argument("--run-dir")
    p.add_argument("rest", nargs="*")
    assert p.parse_args(["--", "--run_dir"]).rest == ["--run_dir"]


def test_unknown_options_pass_through_parse_known_args_as_typed():
    p = ArgumentParser(prog="tool")
    p.add_argument("--run-dir")
    args, extra = p.parse_known_args(["--run_dir", "R", "--other_flag", "trainer.epochs=1"])
    assert args.run_dir == "R" and extra == ["--other_flag", "trainer.epochs=1"]


def test_sub_commands_get_the_same_style(capsys):
    p = ArgumentParser(prog="tool")
    p.add_argument("--log_level", default="info")
    sub = p.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start")
    start.add_argument("--num_gpus", type=int, default=0)
    start.add_argument("--temp-dir")
    args = p.parse_args(["--log-level", "debug", "start", "--num-gpus", "1", "--temp_dir", "T"])
    assert (args.command, args.log_level, args.num_gpus, args.temp_dir) == ("start", "debug", 1, "T")
    with pytest.raises(SystemExit) as exit_:
        p.parse_args(["start", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--num-gpus" in out and "--num_gpus" not in out


def test_declaring_both_spellings_is_an_error():
    p = ArgumentParser(prog="tool")
    p.add_argument("--run-dir")
    p.add_argument("--run_dir", dest="other")
    with pytest.raises(ValueError, match="--run-dir is declared twice"):
        p.format_help()


def test_hyphenated_leaves_short_options_and_the_separator():
    assert [hyphenated(s) for s in ("-n", "--", "--a_b_c", "--x-y")] == ["-n", "--", "--a-b-c", "--x-y"]
