"""pycert: Lean-backed proofs and checkable certificates for claims about LLM inference caches.

Exit codes (documented in the README): 0 the claim holds, 1 a checker rejected, 2 usage or input
error, 130 Ctrl-C, 143 SIGTERM. Each subcommand lives in ``pycert.cli.<name>`` and registers
itself with ``register``.

This module is the console-script entry point, so it imports only ``sys`` before :func:`main` has
its ``try`` in place: a Ctrl-C while the commands (numpy, pydantic, matplotlib ...) are still being
imported exits 130 with one line like one at any later point. Every error, of every command, goes
through :func:`report_error`: one line on stderr, and under ``--json`` also one JSON object
``{"error", "where", "exit"}`` on stdout.
"""

from __future__ import annotations

import os
import sys

_UNSET = object()

# Command -> (the module that registers it, its one-line help). The order is the order shown in --help:
# data in, Lean/solvers out, certificates and audit at the end. The help lives here so that `pycert
# --help` and every command start without importing the other commands (numpy, the solvers, matplotlib).
COMMANDS: dict[str, tuple[str, str]] = {
    "toolchain": ("toolchain", "show the active Lean backend; install or self-check it"),
    "check": ("check", "check Lean files on the kernel (they may import the library)"),
    "build": ("check", "build the Lean library under lean/ (cached by content hash)"),
    "daemon": ("daemon", "the warm checker: Lean kept warm between commands (status, start, stop)"),
    "trace": ("trace", "exact cache figures of a KV-block trace: stats, LRU/Belady curves, offload"),
    "leak": ("leak", "reproduce the cross-tenant prefix-cache leak and its closure on a real engine"),
    "dataset": ("dataset", "make or check the first-touch dataset: measured rows, the closed form, certificates"),
    "engine": ("engine", "replay a trace on a real engine's prefix cache, its own hits beside the certified optimum"),
    "pooling": ("pooling", "pooled vs per-instance KV caching: exact optima, cross-checks, Lean wall"),
    "prove": ("prove", "build, solve, kernel-check, audit and write certificates"),
    "audit": ("audit", "check that every theorem rests only on propext, Classical.choice, Quot.sound"),
    "verify": ("verify", "re-check certificates offline from the inputs they name"),
    "report": ("report", "write a static HTML page of the certificates"),
    "mutate": ("mutate", "plant defects and show that every checker rejects them"),
}

_PARSER_CLASS = None


def _parser_class():  # noqa: ANN202 (argparse is imported lazily, see the module docstring)
    global _PARSER_CLASS
    if _PARSER_CLASS is None:
        import argparse  # lazily, like everything here: see the module docstring
        import re

        from pycert.core.errors import UsageError

        class _Parser(argparse.ArgumentParser):
            def error(self, message: str) -> None:  # argparse's own usage errors: the shared error path
                m = re.match(r"argument (\S+?): (.*)", message, re.S)
                where, why = (f"{self.prog} {m.group(1)}", m.group(2)) if m else (self.prog, message)
                err = UsageError(why, where=where)
                err.text = f"{self.prog}: error: {' '.join(message.split())}"
                raise err

        _PARSER_CLASS = _Parser
    return _PARSER_CLASS


def chosen_command(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option), if it is one of ours."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def build_parser(argv: list[str] | None = None):  # noqa: ANN201
    """The parser; with ``argv``, only the command it names is imported and registered in full (the
    others appear in ``--help`` by name and help line), so that a command starts without the others'
    imports. Without ``argv``, every command is registered (tests enumerate them)."""
    import importlib  # lazily: see the module docstring

    from pycert import __version__

    parser = _parser_class()(prog="pycert", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pycert {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_parser_class())
    sub.required = True
    only = None if argv is None else chosen_command(argv)
    registered: set[str] = set()
    for name, (module, help_) in COMMANDS.items():
        if argv is not None and (only is None or module != COMMANDS[only][0]):
            sub.add_parser(name, help=help_)
        elif module not in registered:
            importlib.import_module(f"pycert.cli.{module}").register(sub)
            registered.add(module)
    return parser


def help_of(command: str) -> str:
    return COMMANDS[command][1]


def add_common(p) -> None:  # noqa: ANN001
    """Flags every subcommand takes."""
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout, no progress")


def add_root(p) -> None:  # noqa: ANN001
    """``--root`` and ``--input``: where the files a certificate names are."""
    from pycert.core.limits import (  # lazily: see the module docstring
        in_path,
        named_path,
    )

    p.add_argument("--root", type=in_path, default=None,
                   help="the directory input paths are relative to (default: the certificates' own directory, "
                        "where pycert prove names them from)")
    p.add_argument("--input", type=named_path, action="append", default=[], metavar="NAME=PATH",
                   help="where an external input that a certificate names by file name is (e.g. a shared trace); "
                        "default: that file name beside the certificates' directory")


def add_backend(p, what: str = "Lean backend") -> None:  # noqa: ANN001
    """``--backend``: the one name of the flag that picks a Lean backend, on every command that runs Lean."""
    p.add_argument("--backend", choices=("native", "wasm"), default=None,
                   help=f"{what} (default: $PYCERT_LEAN, else native if lake is on PATH, else wasm)")
    p.add_argument("--no-daemon", action="store_true",
                   help="check every Lean file with a fresh process, never the warm checker (also $PYCERT_DAEMON=off; "
                        "`pycert daemon --help`)")


def report_error(message: str, where: str | None, code: int, as_json: bool, text: str | None = None,
                 details: dict | None = None, command: str = "pycert") -> int:
    """The one error path: ``text`` (default ``pycert: where: message``) as one line on stderr and,
    under ``--json``, ``{"error": message, "where": where, "exit": code, **details}`` on stdout. An error
    about no place in particular (an interrupt, a setting that contradicts another) is where the command
    that raised it ran: ``where`` is then ``command`` (``pycert trace offload``), never null."""
    from pycert.core.console import escaped  # lazily: see the module docstring

    line = text or ("pycert: " + (f"{where}: {message}" if where else message))
    line = escaped(" ".join(line.split()))  # one line, whatever the message held, that a terminal shows as it is
    try:
        if as_json:
            import json

            sys.stdout.write(json.dumps({"error": " ".join(message.split()), "where": where or command, "exit": code,
                                         **(details or {})}, indent=2) + "\n")
            sys.stdout.flush()
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        pass  # a closed pipe: the exit code still says it
    return code


def _pycert_error(err: BaseException, as_json: bool, command: str) -> int:
    message = getattr(err, "message", None) or str(err)
    return report_error(message, getattr(err, "where", None), err.exit_code, as_json,  # type: ignore[attr-defined]
                        text=getattr(err, "text", None), details=getattr(err, "details", None), command=command)


def command_line_of(argv: list[str], args: object = None) -> str:
    """The command a command line runs, as typed (``pycert trace offload``): from the parsed ``args`` when
    there are some, else the command ``argv`` names."""
    words = [getattr(args, k, None) for k in ("command", "action", "family")] if args is not None else [chosen_command(argv)]
    return " ".join(["pycert", *(w for w in words if isinstance(w, str))])


def _on_sigterm(signum, frame) -> None:  # noqa: ANN001
    from pycert.core.errors import Terminated  # lazily: see the module docstring

    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
    previous = None
    saved_daemon: object = _UNSET
    try:
        import signal

        if hasattr(signal, "SIGTERM"):
            try:
                previous = signal.signal(signal.SIGTERM, _on_sigterm)  # so that temporaries get removed
            except ValueError:
                previous = None  # not the main thread: signals are not ours to handle
        from pycert.core.errors import (
            EXIT_INTERRUPTED,
            EXIT_RESOURCES,
            EXIT_TERMINATED,
            EXIT_USAGE,
            PycertError,
            Terminated,
            UsageError,
        )

        args = None
        try:
            args = build_parser(argv).parse_args(argv)
            as_json = bool(getattr(args, "json", as_json))
            if getattr(args, "no_daemon", False):  # in the environment: the Ray tasks of a sharded proof see it too
                saved_daemon = os.environ.get("PYCERT_DAEMON")
                os.environ["PYCERT_DAEMON"] = "off"
            return int(args.func(args) or 0)
        except UsageError as err:
            _pycert_error(err, as_json, command_line_of(argv, args))
            raise SystemExit(EXIT_USAGE) from None  # as argparse itself exits on a bad command line
        except PycertError as err:
            return _pycert_error(err, as_json, command_line_of(argv, args))
        except MemoryError:  # a check that did not run to its end: exit 3, in one line, never a traceback
            return report_error("out of memory: the command stopped before its end (nothing was rejected)", None,
                                EXIT_RESOURCES, as_json, command=command_line_of(argv, args))
        except ModuleNotFoundError as err:  # an extra's module, past the command's own check: one line, exit 2
            from pycert.core.extras import unmet  # lazily: see the module docstring

            if (missing := unmet(err, command_line_of(argv, args))) is None:
                raise
            return _pycert_error(missing, as_json, command_line_of(argv, args))
        except KeyboardInterrupt:
            return report_error("interrupted", None, EXIT_INTERRUPTED, as_json, command=command_line_of(argv, args))
        except Terminated:
            return report_error("terminated", None, EXIT_TERMINATED, as_json, command=command_line_of(argv, args))
    except BaseException as exc:  # during the imports above, or while reporting an error
        if isinstance(exc, KeyboardInterrupt):
            return report_error("interrupted", None, 130, as_json, command=command_line_of(argv))
        if type(exc).__name__ == "Terminated":
            return report_error("terminated", None, 143, as_json, command=command_line_of(argv))
        raise
    finally:
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)
        if saved_daemon is not _UNSET:  # main() runs in-process too (tests): the setting ends with the command
            if saved_daemon is None:
                os.environ.pop("PYCERT_DAEMON", None)
            else:
                os.environ["PYCERT_DAEMON"] = saved_daemon


if __name__ == "__main__":
    sys.exit(main())
