"""``pycert prove all|FAMILY [options]``: run the pipeline for all families or one, and publish the
certificates. Each family declares its own options (``pycert prove ceiling --trace T``), so an option
a family does not take is a usage error; ``all`` takes every family's."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import BaseModel

from pycert import prove
from pycert.certify.hints import external_inputs, input_paths, prove_command, report_command, verify_command
from pycert.certify.manifest import MANIFEST_NAME, read_manifest
from pycert.cli import add_backend, add_common, help_of, report_error
from pycert.core.console import Progress, emit, plural, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, EXIT_RESOURCES, InputError, Rejected
from pycert.core.extras import require
from pycert.core.files import missing_dirs, remove_empty
from pycert.core.limits import out_dir, seconds
from pycert.core.resources import default_certificate_dir
from pycert.core.schema import declared
from pycert.families import FAMILIES, producer
from pycert.lean.build import DEFAULT_TIMEOUT

ALL = ("Prove every family into one certificate directory: the ceiling and, with --capacity-blocks, the optimum at "
       "each capacity of the embedded synthetic trace and of each --trace; the salt's cost with a tenant map; the "
       "isolation floor, the first-touch cut and the pooling optimum; and certify every engine replay, leak run, audit "
       "and dataset row recorded in it. Each family's own --help says what it proves (pycert prove FAMILY --help).")
OUT_HELP = ("certificate directory (default: ./certificates, or certificates/ when run from a checkout); "
            "everything a certificate names is kept under it (emitted Lean, the synthetic trace, the pooling "
            "instance) except a --trace from outside it, named by its file name")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help=help_of("prove"))
    families = p.add_subparsers(dest="family", metavar="FAMILY", parser_class=type(p))
    families.required = True
    for name in ("all", *FAMILIES):
        help_ = "every family" if name == "all" else f"the {name} family"
        f = families.add_parser(name, help=help_, description=ALL if name == "all" else producer(name).summary)
        host = () if name == "all" else _lenders(name)
        for chosen in FAMILIES if name == "all" else (*host, *_run_by(name)):
            producer(chosen).add_options(f)
        f.add_argument("--out", type=out_dir, default=None, help=OUT_HELP)
        f.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, help="seconds per Lean process")
        add_common(f)
        add_backend(f)
        f.set_defaults(func=cmd_prove)


def _lenders(name: str) -> tuple[str, ...]:
    """The families whose options ``pycert prove <name>`` takes without running them: the one it rides with
    and those it borrows from."""
    chosen = producer(name)
    return (*((chosen.rides_with,) if chosen.rides_with else ()), *chosen.borrows)


def _run_by(name: str) -> tuple[str, ...]:
    """The families ``pycert prove <name>`` runs: ``name`` and those that ride with it."""
    return (name, *(other for other in FAMILIES if producer(other).rides_with == name))


class NextSteps(BaseModel):
    """What to run after a prove: verify and report what it wrote (with ``--input`` only for a trace verify would
    not find by itself), and the certificates of the directory it left as they were, with the prove that would
    make them again and the traces it needs that are not on this machine (``needs``: then the command runs once
    they are where it names them)."""

    verify: str | None = None
    report: str | None = None
    left_alone: list[str] = []
    prove_again: str | None = None
    needs: list[str] = []


def next_steps(written: list[Path], out: Path, traces: list[Path]) -> NextSteps:
    """``out`` as the user named it; ``traces`` the run's ``--trace`` files, as given."""
    try:
        listed = sorted(n for n in read_manifest(out / MANIFEST_NAME) if (out / n).is_file())
    except (InputError, Rejected):  # no manifest yet, or one the next verify will name
        listed = []
    names = [w.name for w in written]
    given = {t.name: t for t in traces}
    steps = NextSteps(left_alone=[n for n in listed if n not in names])
    if names:
        steps.verify = verify_command(out, None if set(names) == set(listed) else names,
                                      input_paths(external_inputs(written), out, given))
        steps.report = report_command(out, input_paths(external_inputs(out / n for n in listed), out, given))
    # a fleet is proved by its own command (its hosts, routing and engine are no flags of prove all)
    fleets = [n for n in steps.left_alone if (declared(out / n) or {}).get("family") == "fleet"]
    others = [n for n in steps.left_alone if n not in fleets]
    commands: list[str] = []
    for group in (others, fleets):
        if group:
            command, needs = prove_command([out / n for n in group], out)
            commands.append(command)
            steps.needs += [n for n in needs if n not in steps.needs]
    steps.prove_again = "\n  ".join(commands) or None
    return steps


def render(res: prove.ProveResult, steps: NextSteps) -> str:
    stages = table(["stage", "status", "seconds", "detail"],
                   [(s.name, s.status, f"{s.seconds:.1f}", s.detail[:90]) for s in res.stages])
    rows = table(["certificate", "figure", "status", "claim"],
                 [(r.certificate, r.figure, r.status, r.claim[:110]) for r in res.rows])
    verdict = "ALL HOLD" if res.ok else "REJECTED" if res.rejected else "NOT CHECKED"
    lines = [f"{stages}\n\n{rows}\n\n{verdict}: {plural(len(res.written), 'certificate')} written"]
    lines += [f"not checked: {u}" for u in res.unchecked]
    if steps.verify:
        lines += ["", "check them, offline:", f"  {steps.verify}", f"  {steps.report}"]
    if steps.left_alone:
        lines += ["", f"not proved by this run, left as they were: {', '.join(steps.left_alone)}; to prove them again:"]
        if steps.needs:
            lines += [f"  (it needs {', '.join(steps.needs)}, which is not on this machine: put it where the command "
                      "names it first)"]
        lines += [f"  {steps.prove_again}"]
    return "\n".join(lines)


def cmd_prove(args: argparse.Namespace) -> int:
    require("prove", "pycert prove")
    everything = args.family == "all"
    jobs = [(producer(name), producer(name).options_from(args, everything))
            for name in (FAMILIES if everything else _run_by(args.family))]
    out = args.out or default_certificate_dir()
    made = missing_dirs(out)
    try:
        res = prove.prove(jobs, backend=args.backend, out_dir=args.out, timeout=args.timeout,
                          progress=Progress(enabled=not args.json, force=True))
    except BaseException:  # Ctrl-C or a refusal: a first run leaves no empty --out behind
        remove_empty(made)
        raise
    steps = next_steps([Path(w) for w in res.written], out, getattr(args, "trace", []))
    emit(args.json, {**res.model_dump(mode="json"), "next": steps.model_dump()}, lambda: render(res, steps))
    if res.rejected:
        return EXIT_REJECTED
    if res.unchecked:  # nothing was refused: a check ran out of memory or time
        if not args.json:
            report_error(res.unchecked[0], None, EXIT_RESOURCES, as_json=False)
        return EXIT_RESOURCES
    return EXIT_OK
