"""The command reference of the documentation site, read off the `probmed` parser itself.

Why: a hand-written option list drifts from the code; these pages are made from
the same argparse parsers `probmed` runs (probmed.cli.build_parser) each time the
site is built (docs/_hooks/cli_reference.py), so an option that is renamed,
added or removed changes its page with it. One page per command; a command with
actions (`probmed review export | import | truth | rates`) lists each.
"""

from __future__ import annotations

import argparse
import os

from probmed.core.markdown import markdown_table

FOLDER = "reference/commands"
"""Where the pages go, relative to the documentation folder."""
USAGE_WIDTH = 80


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's sub-commands by name (aliases left out), in the order they were declared."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    out: dict[str, argparse.ArgumentParser] = {}
    for sub in subs:
        for name, child in sub.choices.items():
            if child not in out.values():
                out[name] = child
    return out


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each sub-command's one-line help, as `probmed --help` shows it."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help or "" for sub in subs for choice in sub._choices_actions}


def _usage(parser: argparse.ArgumentParser) -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(USAGE_WIDTH)  # argparse wraps at the terminal's width: the page must not depend on it
    try:
        return parser.format_usage().strip()
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs != 0:
            names += " " + (action.metavar if isinstance(action.metavar, str) else action.dest.upper())
        return names
    return action.metavar if isinstance(action.metavar, str) else action.dest


def _meaning(action: argparse.Action) -> str:
    text = (action.help or "").replace("%(default)s", str(action.default))
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text = (text + " " if text else "") + "one of: " + ", ".join(str(c) for c in action.choices)
    if action.default not in (None, False, argparse.SUPPRESS) and action.option_strings:
        text += f" (default: {action.default})"
    return text


def _arguments_table(parser: argparse.ArgumentParser) -> str:
    rows = [{"argument": f"`{_argument(a)}`", "meaning": _meaning(a)} for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    import pandas as pd

    return markdown_table(pd.DataFrame(rows, columns=["argument", "meaning"])) if rows else ""


def _section(parser: argparse.ArgumentParser, title: str, help_line: str, level: str) -> list[str]:
    out = [f"{level} `{title}`", ""]
    if help_line:
        out += [help_line[0].upper() + help_line[1:] + ".", ""]
    out += ["```text", _usage(parser), "```", "", _arguments_table(parser)]
    return out


def command_pages(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Page path (relative to the documentation folder) -> Markdown, one per command, and an index page."""
    helps = _helps(parser)
    pages: dict[str, str] = {}
    index = ["# Command reference", "",
             "Every `probmed` command, read from the command line's own parsers when this site is built. Every "
             "command also takes `--params FILE` and dotted `key=value` overrides of any parameter anywhere on its "
             "line ([Parameters](../parameters.md)); exit status 0, 1 (some questions failed), 2 (bad input or "
             "configuration), 3 (the environment), 4 (a bug).", ""]
    for name, child in _subcommands(parser).items():
        lines = [f"# probmed {name}", ""]
        actions = _subcommands(child)
        if actions:
            lines += [helps.get(name, "").capitalize() + ".", ""]
            child_helps = _helps(child)
            for action, leaf in actions.items():
                lines += _section(leaf, f"probmed {name} {action}", child_helps.get(action, ""), "##")
        else:
            lines += _section(child, f"probmed {name}", helps.get(name, ""), "##")[2:]
        pages[f"{FOLDER}/{name}.md"] = "\n".join(lines).rstrip("\n") + "\n"
        index.append(f"- [`probmed {name}`]({name}.md): {helps.get(name, '')}")
    pages[f"{FOLDER}/index.md"] = "\n".join(index) + "\n"
    return pages
