"""The pages that are generated at build time, so they cannot drift from the code.

`docs/cli.md` and `docs/errors.md` hold a marker where the generated part goes; this mkdocs
hook (`hooks:` in mkdocs.yml) replaces it when the site is built. The CLI reference walks the
argparse parser the command itself runs (`workbench.cli.verbs.build_parser`), and the error
codes are the registry every raise is checked against (`workbench.errors`): a verb, a flag or
a code added in code is on the site at the next build, with nobody to remember it.
"""

from __future__ import annotations

import argparse
from typing import Any

CLI_MARKER = "<!-- generated: cli reference -->"
ERRORS_MARKER = "<!-- generated: error codes -->"
ERROR_TREE_MARKER = "<!-- generated: error tree -->"

# A fixed width, so the usage lines do not depend on the terminal the site was built in.
_WIDTH = 96


def _cell(text: str) -> str:
    """Text that stays inside one cell of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help:
        return ""
    formatter = argparse.HelpFormatter(parser.prog, width=_WIDTH)
    return str(formatter._expand_help(action))  # expands %(default)s the way --help does


def _name(action: argparse.Action) -> str:
    """How the argument is written on the command line, as `--help` spells it."""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        value = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        value = str(action.metavar or action.dest.upper())
    if not action.option_strings:
        return value
    flags = ", ".join(action.option_strings)
    return flags if action.nargs == 0 else f"{flags} {value}"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, [], ""):
        return ""
    return f"`{action.default}`"


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """Every command under `parser`, depth first, as (name, parser, its one-line help)."""
    found: list[tuple[str, argparse.ArgumentParser, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((sub.prog, sub, helps.get(name, "")))
                found += _commands(sub)
    return found


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown for every command of `parser`: what it does, its usage, its arguments."""
    out: list[str] = []
    for prog, sub, line in _commands(parser):
        out += [f"## `{prog}`", ""]
        about = sub.description or line
        if about:
            out += [" ".join(about.split()), ""]
        out += ["```", _usage(sub), "```", ""]
        rows = [
            a
            for a in sub._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        ]
        if rows:
            out += ["| argument | default | meaning |", "|---|---|---|"]
            out += [
                f"| `{_cell(_name(a))}` | {_default(a)} | {_cell(_help(sub, a))} |" for a in rows
            ]
            out.append("")
    return "\n".join(out)


def error_codes() -> tuple[str, str]:
    """The registry of stable codes: its tree of classes, and its table of codes."""
    from workbench import errors

    return errors.tree(), errors.table()


def render(markdown: str) -> str:
    """A page's Markdown with each generated part in place of its marker."""
    if CLI_MARKER in markdown:
        from workbench.cli.verbs import build_parser

        markdown = markdown.replace(CLI_MARKER, cli_reference(build_parser()))
    if ERRORS_MARKER in markdown or ERROR_TREE_MARKER in markdown:
        tree, table = error_codes()
        markdown = markdown.replace(ERROR_TREE_MARKER, f"```\n{tree}\n```")
        markdown = markdown.replace(ERRORS_MARKER, table)
    return markdown


def on_page_markdown(markdown: str, **_: Any) -> str:
    return render(markdown)
