"""pycert: Lean-backed proofs and checkable certificates for claims about LLM inference caches.

Exit codes (documented in the README): 0 the claim holds, 1 a checker rejected, 2 usage or input
error. Each subcommand lives in ``pycert.commands.<name>`` and registers itself with ``register``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pycert import __version__
from pycert.errors import EXIT_USAGE, PycertError

# Order is the order shown in --help: data in, Lean/solvers out, certificates and audit at the end.
COMMAND_MODULES = (
    "toolchain",
    "check",
    "trace",
    "pooling",
    "prove",
    "audit",
    "verify",
    "report",
    "mutate",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own usage errors: one line, exit 2
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pycert", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pycert {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"pycert.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"pycert.commands.{name}":
                continue  # command not built yet
            raise
        module.register(sub)
    return parser


def add_common(p: argparse.ArgumentParser) -> None:
    """Flags every subcommand takes."""
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout, no progress")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PycertError as err:
        print(f"pycert: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("pycert: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
