"""MkDocs hooks: the pages that are generated, never written by hand.

``cli.md`` is every command's ``--help``, taken from pycert's own parser at build time, so the reference
cannot go stale. ``architecture.md``, ``benchmarks.md`` and ``developers.md`` are the top-level
``ARCHITECTURE.md``, ``BENCHMARKS.md`` and ``DEVELOPERS.md``, which stay where a checkout's reader looks for
them; the site shows the same text, its links moved from the repository's root to the site's (``docs/x.md``
is ``x.md`` there, ``BENCHMARKS.md`` is ``benchmarks.md``).
"""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent
WIDTH = 100
"""Columns of the help text: fixed, so the page is the same whoever builds it on whatever terminal."""
TOP_LEVEL = {"architecture.md": "ARCHITECTURE.md", "benchmarks.md": "BENCHMARKS.md", "developers.md": "DEVELOPERS.md"}


def commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser below it, depth first, in the order ``--help`` lists them."""
    yield parser
    for action in parser._actions:  # argparse keeps subcommands only here; no public accessor exists
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for sub in action.choices.values():
                if id(sub) not in seen:  # an alias maps a second name to the same parser
                    seen.add(id(sub))
                    yield from commands(sub)


def cli_reference() -> str:
    """The reference page: one section per command, its ``--help`` verbatim."""
    from pycert.cli import build_parser  # the installed pycert (the docs are built in its virtual environment)

    out = ["# Command reference", "",
           "Every command's `--help`, generated from pycert's own parser when this site was built. Every",
           "command also takes `--json` (one JSON object on stdout, errors included); exit codes are in",
           "[Exit codes, errors and limits](errors.md).", ""]
    for parser in commands(build_parser()):
        parser.formatter_class = functools.partial(parser.formatter_class, width=WIDTH)
        out += [f"## `{parser.prog}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def site_links(text: str) -> str:
    """A top-level file's links as the site has them: ``docs/x.md`` is ``x.md``, ``BENCHMARKS.md`` is
    ``benchmarks.md``; a link to anything else in the repository (code, a folder) stays as text."""
    pages = {source: page for page, source in TOP_LEVEL.items()}

    def link(m: re.Match[str]) -> str:
        label, target, anchor = m.group(1), m.group(2), m.group(3) or ""
        if target.startswith("docs/") and target.endswith(".md"):
            return f"[{label}]({target[5:]}{anchor})"
        if target in pages:
            return f"[{label}]({pages[target]}{anchor})"
        if not target or re.match(r"[a-z]+://", target):  # an anchor on the same page, or the web
            return m.group(0)
        return label
    return re.sub(r"\[([^\]]+)\]\(([^)#\s]*)(#[^)\s]*)?\)", link, text)


def on_files(files: Files, config) -> Files:  # noqa: ANN001 (MkDocs' config object)
    files.append(File.generated(config, "cli.md", content=cli_reference()))
    for page, source in TOP_LEVEL.items():
        files.append(File.generated(config, page, content=site_links((REPO / source).read_text(encoding="utf-8"))))
    return files
