"""The commands pycert prints for what comes next: verify and report a certificate directory (after
``pycert prove``, and on the report page), and the ``pycert prove`` that would make again the
certificates a run left alone. Each names the directory as the user gave it and adds ``--input
NAME=PATH`` for every external trace that verify would not find beside the directory (``PATH``
itself when it is not known here). Pure functions of the certificate files; nothing is run.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from pycert.core import gate
from pycert.core.errors import InputError
from pycert.core.files import certificate_root
from pycert.core.limits import MAX_TRACE_BYTES
from pycert.core.resources import shared_traces_dir
from pycert.core.schema import declared, declared_inputs
from pycert.families.traces import DEFAULT_TRACE

UNKNOWN = "PATH"
"""Stands for a file's place when pycert does not know it: the command names the file, the user fills it in."""


def shown(path: Path | str) -> str:
    """``path`` for a command line, quoted for a POSIX shell: relative to the working directory when it
    lies below it or one level up, else absolute."""
    absolute = Path(path).absolute()
    relative = Path(os.path.relpath(absolute))
    return shlex.quote(str(absolute) if relative.parts[:2] == (os.pardir, os.pardir) else str(relative))


def _holds(path: Path, sha256: str) -> bool:
    try:  # a file beside a received directory: read like one of its own (no link, a regular file)
        return gate.beside(gate.named(path)).sha256("a trace file", MAX_TRACE_BYTES) == sha256
    except InputError:
        return False


def external_inputs(cert_files: Iterable[Path]) -> dict[str, str]:
    """File name -> sha256 of every external input (a trace from outside the directory) the
    certificates name."""
    return {i["path"]: str(i.get("sha256", ""))
            for f in cert_files for i in declared_inputs(f) or [] if i.get("external")}


def input_paths(wanted: Mapping[str, str], cert_dir: Path,
                given: Mapping[str, Path] | None = None) -> dict[str, Path | None]:
    """For each external input (name -> sha256) that verify would not find beside ``cert_dir``: where
    it is (``given`` by name, else a file of that name and content in the Mooncake trace folder a
    checkout documents), or None when that is not known here."""
    beside = certificate_root(cert_dir).parent
    shared = shared_traces_dir()
    out: dict[str, Path | None] = {}
    for name, sha256 in sorted(wanted.items()):
        path = (given or {}).get(name)
        if path is not None and path.resolve() == (beside / name).resolve():
            continue
        if path is None:
            if _holds(beside / name, sha256):
                continue
            path = shared / name if shared is not None and _holds(shared / name, sha256) else None
        out[name] = path
    return out


def input_flags(paths: Mapping[str, Path | None]) -> str:
    return "".join(f" --input {shlex.quote(name + '=')}{shown(p) if p else shlex.quote(f'{UNKNOWN}/{name}')}"
                   for name, p in sorted(paths.items()))


def verify_command(cert_dir: Path, names: Sequence[str] | None, inputs: Mapping[str, Path | None],
                   root: Path | None = None) -> str:
    """``pycert verify`` of the certificates ``names`` in ``cert_dir`` (None: all of them, ``DIR/*.json``)."""
    certs = f"{shown(cert_dir)}/*.json" if names is None else " ".join(shown(cert_dir / n) for n in names)
    return f"pycert verify {certs}" + (f" --root {shown(root)}" if root else "") + input_flags(inputs)


def report_command(cert_dir: Path, inputs: Mapping[str, Path | None]) -> str:
    """``pycert report`` of ``cert_dir``; ``--no-curves`` when a trace is not known here (only the
    hit-rate curves read the traces), so that the command runs as printed."""
    if None in inputs.values():
        return f"pycert report --certs {shown(cert_dir)} --no-curves"
    return f"pycert report --certs {shown(cert_dir)}" + input_flags(inputs)


def prove_command(cert_files: Sequence[Path], cert_dir: Path) -> str:
    """The ``pycert prove`` that would write ``cert_files`` (of ``cert_dir``) again: their family (``all``
    when they are of several), a ``--trace`` for each trace (the embedded default only beside others: a
    ``--trace`` replaces it), the capacities of capacity and isolation-cost certificates (which may make a few
    more: every trace at every capacity named) and an isolation-cost certificate's tenant map."""
    families = sorted({str((declared(f) or {}).get("family")) for f in cert_files})
    externals = input_paths(external_inputs(cert_files), cert_dir)
    beside = certificate_root(cert_dir).parent
    traces, default = [], None
    for f in cert_files:
        for i in declared_inputs(f) or []:
            if i.get("role") != "trace":
                continue
            if PurePosixPath(i["path"]) == PurePosixPath(DEFAULT_TRACE.as_posix()):
                default = shown(cert_dir / i["path"])  # named only beside other traces: alone it is prove's default
            elif not i.get("external"):
                traces.append(shown(cert_dir / i["path"]))
            elif i["path"] in externals:
                found = externals[i["path"]]
                traces.append(shown(found) if found else shlex.quote(f"{UNKNOWN}/{i['path']}"))
            else:
                traces.append(shown(beside / i["path"]))
    traces = [default, *traces] if traces and default else traces
    params = [(declared(f) or {}).get("parameters") or {} for f in cert_files]
    capacities = sorted({int(c) for p in params if isinstance(c := p.get("capacity_blocks"), int)})
    # a prompts trace's blocks depend on the size it was cut at (one --block-tokens serves a run)
    cut = sorted({b for p in params if isinstance(b := p.get("block_tokens"), int)})
    return (f"pycert prove {families[0] if len(families) == 1 else 'all'}"
            + "".join(f" --trace {t}" for t in dict.fromkeys(traces))
            + (f" --capacity-blocks {','.join(map(str, capacities))}" if capacities else "")
            + (f" --block-tokens {cut[0]}" if len(cut) == 1 else "") + tenant_flags(params) + f" --out {shown(cert_dir)}")


def tenant_flags(params: list[dict]) -> str:
    """The tenant map of isolation-cost certificates as ``prove`` flags (the first map, where they name several:
    one run takes one)."""
    rule = next((p for p in params if isinstance(p.get("tenant_rule"), str)), None)
    if rule is None or rule["tenant_rule"] == "field":
        return " --tenant-rule field" if rule else ""
    named = f"prefix:{rule.get('prefix_blocks')}" if rule["tenant_rule"] == "prefix" else str(rule["tenant_rule"])
    return f" --tenants {rule.get('tenants')} --tenant-rule {shlex.quote(named)}"
