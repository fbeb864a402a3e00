"""The one flag style of every COBALT command line: long options are shown as ``--run-dir`` and also
accepted as ``--run_dir`` (the spelling of the reference's scripts), whichever form a CLI declares.

Use :class:`ArgumentParser` in place of :class:`argparse.ArgumentParser`; its sub-parsers, argument
groups and mutually exclusive groups behave the same way.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def hyphenated(option: str) -> str:
    """``--run_dir`` -> ``--run-dir``; short options and anything else pass unchanged."""
    if not option.startswith("--") or option == "--":
        return option
    return "--" + option[2:].replace("_", "-")


class ArgumentParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose long options are shown hyphenated and accept both
    ``-`` and ``_`` between words. Both spellings set the same ``dest``."""

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        if self._subparsers is None:  # a sub-command's options are its own parser's to judge
            self._refuse_unknown_options(args)
        return super().parse_args(args, namespace)

    def _refuse_unknown_options(self, args: list[str]) -> None:
        """An option this parser does not have is named with the nearest it has, before argparse
        would report a required option as missing instead (``--profle`` for ``--profile``)."""
        import difflib

        self._hyphenate_options()
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for arg in self._respell(args):
            if arg == "--":
                return
            name = arg.partition("=")[0]
            if name.startswith("--") and len(name) > 2 and not self._names_option(name):
                near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                self.error(f"unrecognized option {name}" + (f"; did you mean {near[0]}?" if near else ""))

    def parse_known_args(self, args=None, namespace=None):
        self._hyphenate_options()
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(self._respell(args), namespace)

    def format_usage(self) -> str:
        self._hyphenate_options()
        return super().format_usage()

    def format_help(self) -> str:
        self._hyphenate_options()
        return super().format_help()

    def _hyphenate_options(self) -> None:
        """Rename every declared long option to its hyphen form (idempotent). Declarations are
        rewritten here, not in ``add_argument``, because argument groups add actions without
        going through the parser's own methods."""
        for action in self._actions:
            shown = list(dict.fromkeys(hyphenated(s) for s in action.option_strings))
            if shown == action.option_strings:
                continue
            for old in action.option_strings:
                if self._option_string_actions.get(old) is action:
                    del self._option_string_actions[old]
            for new in shown:
                other = self._option_string_actions.get(new)
                if other is not None and other is not action:
                    raise ValueError(f"{self.prog}: {new} is declared twice (once with underscores)")
                self._option_string_actions[new] = action
            action.option_strings = shown

    def _respell(self, args: list[str]) -> list[str]:
        """Rewrite ``--run_dir[=V]`` as ``--run-dir[=V]`` when that names (or, with ``allow_abbrev``,
        abbreviates) one of this parser's options; anything else is left for argparse to judge, so
        a typo is reported as typed. Stops at ``--``, after which every token is positional."""
        out = []
        for i, arg in enumerate(args):
            if arg == "--":
                return out + args[i:]
            name, eq, value = arg.partition("=")
            spelled = hyphenated(name)
            if spelled != name and self._names_option(spelled):
                arg = spelled + eq + value
            out.append(arg)
        return out

    def _names_option(self, option: str) -> bool:
        if option in self._option_string_actions:
            return True
        return self.allow_abbrev and any(known.startswith(option) for known in self._option_string_actions)


def run(main: Callable[[], object]) -> object:
    """Run a CLI body and return what it returns (its exit status); bad input -- a data or config
    error, a missing file, an output that exists -- ends with one line on stderr and exit status 2
    instead of a traceback."""
    from cobalt.common.errors import ConfigError, DataError

    try:
        return main()
    except (DataError, ConfigError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
