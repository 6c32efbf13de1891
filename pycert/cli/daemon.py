"""``pycert daemon [status|start|stop]``: the warm checker (:mod:`pycert.lean.daemon`), which ``pycert prove``
starts on first use and which exits by itself after an idle time."""

from __future__ import annotations

import argparse
import time

from pycert.cli import add_common, help_of
from pycert.core.console import emit, invocation, plural, table
from pycert.core.errors import EXIT_OK, ToolchainMissing
from pycert.lean import daemon
from pycert.lean.toolchain import find_installed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("daemon", help=help_of("daemon"), description=(
        "The warm checker: pycert's Lean workers kept alive between commands, for this user only (a Unix socket "
        "of mode 0600 in /tmp/pycert-$UID/daemon, or $PYCERT_DAEMON_DIR), started by the first command that proves "
        f"and finds none, stopped after {daemon.IDLE_S:.0f} s without a job ($PYCERT_DAEMON_IDLE, or `pycert daemon "
        "start --idle SECONDS`), replaced when pycert, its Lean library or the toolchain changes. --no-daemon (on "
        "every command that runs Lean) or $PYCERT_DAEMON=off checks with fresh processes; `pycert verify` never "
        "uses it (docs/daemon.md)."))
    add_common(p)
    p.set_defaults(func=cmd_status)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    s = actions.add_parser("status", help="this user's warm checkers: pid, key, workers, jobs, idle time")
    add_common(s)
    s.set_defaults(func=cmd_status)
    st = actions.add_parser("start", help="start this pycert's warm checker and wait until a Lean worker is warm")
    st.add_argument("--idle", type=str, default=None, metavar="SECONDS",
                    help=f"exit after this many seconds without a job (1 to {daemon.MAX_IDLE_S:.0f}; default "
                         f"$PYCERT_DAEMON_IDLE, else {daemon.IDLE_S:.0f}); a checker already running takes it from now")
    add_common(st)
    st.set_defaults(func=cmd_start)
    sp = actions.add_parser("stop", help="stop this pycert's warm checker (a job in flight ends not checked, exit 3)")
    sp.add_argument("--all", action="store_true", help="stop every warm checker of this user (other versions' too)")
    add_common(sp)
    sp.set_defaults(func=cmd_stop)


def _rows(found: list[daemon.DaemonStatus]) -> str:
    if not found:
        return f"no warm checker running (they live in {daemon.daemon_dir()})"
    return table(["pid", "this pycert", "key", "up s", "idle s", "exits after s", "jobs", "workers (pid jobs MiB)"],
                 [(d.pid, "yes" if d.current else "no (another version)", d.key[:12], f"{d.uptime_s:.0f}",
                   f"{d.idle_for_s:.0f}", f"{d.idle_s:.0f}", d.jobs,
                   ", ".join(f"{w.pid} {w.jobs} {w.rss_mib:,}{' busy' if w.busy else ''}" for w in d.workers)
                   + (f" (+{d.starting} starting)" if d.starting else "")) for d in found])


def cmd_status(args: argparse.Namespace) -> int:
    found = daemon.status(find_installed())
    emit(args.json, {"daemons": [d.model_dump() for d in found], "directory": str(daemon.daemon_dir())},
         lambda: _rows(found))
    return EXIT_OK


def cmd_start(args: argparse.Namespace) -> int:
    installed = find_installed()
    if installed is None:
        raise ToolchainMissing(f"the warm checker runs the wasm Lean, which is not installed here: run "
                               f"`{invocation()} toolchain install`")
    idle = None if args.idle is None else daemon.idle_seconds(args.idle)
    t0 = time.monotonic()
    st = daemon.start(installed, idle_s=idle)
    emit(args.json, {**st.model_dump(), "waited_s": round(time.monotonic() - t0, 1)},
         lambda: f"warm checker pid {st.pid}: {plural(len(st.workers), 'warm worker')} "
                 f"(waited {time.monotonic() - t0:.1f} s; log {daemon.log_path(installed)})")
    return EXIT_OK


def cmd_stop(args: argparse.Namespace) -> int:
    stopped = daemon.stop(find_installed(), every=args.all)
    emit(args.json, {"stopped": stopped},
         lambda: f"stopped: {', '.join(map(str, stopped))}" if stopped else "no warm checker to stop")
    return EXIT_OK
