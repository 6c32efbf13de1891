"""The commands pycert prints for what comes next: verify and report a certificate directory (after
``pycert prove``, and on the report page), and the ``pycert prove`` that would make again the
certificates a run left alone. Each starts as pycert runs here (:func:`~pycert.core.console.invocation`:
``pycert``, or ``.venv/bin/pycert`` after ``make prove``), names the directory as the user gave it, and adds
``--input NAME=PATH`` for an external trace only where verify would not find it by itself (beside the
directory, where it was proved from, in a checkout's shared trace folder: :class:`~pycert.certify.inputs.Locator`).
A trace that is not on this machine is said to be missing, never put in a command that would fail as printed.
Pure functions of the certificate files; nothing is run.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from pycert.certify.inputs import Locator, holding, shared_copy
from pycert.core.console import invocation
from pycert.core.errors import InputError
from pycert.core.files import certificate_root
from pycert.core.gate import inside
from pycert.core.limits import MAX_TRACE_BYTES
from pycert.core.resources import shared_traces_dir
from pycert.core.schema import InputFile, declared, declared_inputs
from pycert.families.traces import DEFAULT_TRACE


def shown(path: Path | str) -> str:
    """``path`` for a command line, quoted for a POSIX shell: relative to the working directory when it
    lies below it or one level up, else absolute."""
    absolute = Path(path).absolute()
    relative = Path(os.path.relpath(absolute))
    return shlex.quote(str(absolute) if relative.parts[:2] == (os.pardir, os.pardir) else str(relative))


def external_inputs(cert_files: Iterable[Path]) -> dict[str, InputFile]:
    """File name -> the external input (a trace from outside the directory) of that name the certificates name
    (one that does not parse is left to the verify that reports it)."""
    out: dict[str, InputFile] = {}
    for f in cert_files:
        for i in declared_inputs(f) or []:
            if i.get("external"):
                try:
                    out.setdefault(str(i.get("path")), InputFile.model_validate(i))
                except ValidationError:
                    continue
    return out


def _beside(inp: InputFile, cert_dir: Path) -> bool:
    try:  # a file beside a received directory: read like one of its own (no link, a regular file)
        return inside(certificate_root(cert_dir).parent, inp.path).sha256("a trace file", MAX_TRACE_BYTES) == inp.sha256
    except InputError:
        return False


def input_paths(wanted: Mapping[str, InputFile], cert_dir: Path,
                given: Mapping[str, Path] | None = None) -> dict[str, Path | None]:
    """For each external input (name -> the input) that verify would not find by itself: where it is (``given``
    by name), or None when it is not on this machine. An input verify finds beside ``cert_dir``, at its origin or
    in the shared trace folder needs no ``--input``."""
    locator = Locator(root=certificate_root(cert_dir))
    out: dict[str, Path | None] = {}
    for name, inp in sorted(wanted.items()):
        if _beside(inp, cert_dir):
            continue
        path = (given or {}).get(name)
        if path is not None and (path.resolve() == (certificate_root(cert_dir).parent / name).resolve()
                                 or (inp.origin is not None and path.resolve() == Path(inp.origin))):
            continue
        if path is None and locator.hinted(inp) is not None:
            continue
        out[name] = path
    return out


def missing_traces(paths: Mapping[str, Path | None], wanted: Mapping[str, InputFile]) -> list[str]:
    """The external traces of ``paths`` not on this machine, each as ``name (sha256 abc...)``."""
    return [f"{name} (sha256 {wanted[name].sha256[:12]}...)" for name, p in sorted(paths.items()) if p is None]


def input_flags(paths: Mapping[str, Path | None]) -> str:
    return "".join(f" --input {shlex.quote(name + '=')}{shown(p)}" for name, p in sorted(paths.items()) if p)


def verify_command(cert_dir: Path, names: Sequence[str] | None, inputs: Mapping[str, Path | None],
                   root: Path | None = None) -> str:
    """``pycert verify`` of the certificates ``names`` in ``cert_dir`` (None: all of them, ``DIR/*.json``)."""
    certs = f"{shown(cert_dir)}/*.json" if names is None else " ".join(shown(cert_dir / n) for n in names)
    return f"{invocation()} verify {certs}" + (f" --root {shown(root)}" if root else "") + input_flags(inputs)


def report_command(cert_dir: Path, inputs: Mapping[str, Path | None]) -> str:
    """``pycert report`` of ``cert_dir`` (a trace not on this machine: its certificates are marked not checked
    on the page, and it has no curve)."""
    return f"{invocation()} report --certs {shown(cert_dir)}" + input_flags(inputs)


def prove_command(cert_files: Sequence[Path], cert_dir: Path) -> tuple[str, list[str]]:
    """The ``pycert prove`` that would write ``cert_files`` (of ``cert_dir``) again: their family (``all``
    when they are of several), a ``--trace`` for each trace (the embedded default only beside others: a
    ``--trace`` replaces it), the capacities of capacity and isolation-cost certificates (which may make a few
    more: every trace at every capacity named), how their traces were read and an isolation-cost certificate's
    tenant map; and the traces it needs that are not on this machine (the command names each where a checkout
    looks for it, or by its origin: it runs once the file is there)."""
    families = sorted({str((declared(f) or {}).get("family")) for f in cert_files})
    wanted = external_inputs(cert_files)
    externals = input_paths(wanted, cert_dir)
    locator = Locator(root=certificate_root(cert_dir))
    beside = certificate_root(cert_dir).parent
    traces, default, absent = [], None, missing_traces(externals, wanted)
    for f in cert_files:
        for i in declared_inputs(f) or []:
            if i.get("role") != "trace":
                continue
            if PurePosixPath(i["path"]) == PurePosixPath(DEFAULT_TRACE.as_posix()):
                default = shown(cert_dir / i["path"])  # named only beside other traces: alone it is prove's default
            elif not i.get("external"):
                traces.append(shown(cert_dir / i["path"]))
            elif (inp := wanted.get(i["path"])) is None or _beside(inp, cert_dir):
                traces.append(shown(beside / i["path"]))
            else:  # the checkout's copy, else where verify finds it, else where it was proved from or a checkout keeps it
                found = holding(shared_copy(inp), inp) or locator.hinted(inp)
                shared = shared_traces_dir()
                traces.append(shown(found.path if found else inp.origin if inp.origin else
                                    (shared or beside) / i["path"]))
    traces = [default, *traces] if traces and default else traces
    params = [(declared(f) or {}).get("parameters") or {} for f in cert_files]
    capacities = sorted({int(c) for p in params if isinstance(c := p.get("capacity_blocks"), int)})
    # blocks cut from token ids depend on the size they were cut at (one --block-tokens serves a run); an engine's
    # block_tokens is its page size, no reading of the trace
    cut = sorted({b for p in params if "trace_format" in p and isinstance(b := p.get("block_tokens"), int)})
    formats = {p.get("trace_format") for p in params if p.get("trace_format")}
    order = {p.get("trace_order") for p in params}
    command = (f"{invocation()} prove {families[0] if len(families) == 1 else 'all'}"
               + "".join(f" --trace {t}" for t in dict.fromkeys(traces))
               + (f" --capacity-blocks {','.join(map(str, capacities))}" if capacities else "")
               + (f" --format {formats.pop()}" if len(formats) == 1 and formats & {"requests", "prompts"} else "")
               + (f" --block-tokens {cut[0]}" if len(cut) == 1 else "") + (" --sort" if order == {"timestamp"} else "")
               + tenant_flags(params) + fleet_flags(params) + f" --out {shown(cert_dir)}")
    return command, absent


def fleet_flags(params: list[dict]) -> str:
    """The hosts, routings and engine of fleet certificates as ``prove fleet`` flags (one run proves every
    routing at every number of hosts it is given)."""
    fleets = [p for p in params if isinstance(p.get("hosts"), int) and isinstance(p.get("routing"), str)]
    if not fleets:
        return ""
    hosts = sorted({p["hosts"] for p in fleets})
    routings = list(dict.fromkeys(p["routing"] for p in fleets))
    engines = {str((p.get("engine") or {}).get("engine", "")) for p in fleets} - {""}
    engine = " --engine vllm" if any("vLLM" in e for e in engines) else " --engine transformers" if engines else ""
    threshold = next((f" --threshold {p['threshold']}" for p in fleets if p.get("threshold") is not None), "")
    return (f" --hosts {','.join(map(str, hosts))}" + "".join(f" --routing {r}" for r in routings) + threshold
            + engine)


def tenant_flags(params: list[dict]) -> str:
    """The tenant map of isolation-cost certificates as ``prove`` flags (the first map, where they name several:
    one run takes one)."""
    rule = next((p for p in params if isinstance(p.get("tenant_rule"), str)), None)
    if rule is None or rule["tenant_rule"] == "field":
        return " --tenant-rule field" if rule else ""
    named = f"prefix:{rule.get('prefix_blocks')}" if rule["tenant_rule"] == "prefix" else str(rule["tenant_rule"])
    return f" --tenants {rule.get('tenants')} --tenant-rule {shlex.quote(named)}"
