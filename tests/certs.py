"""Certificates for tests, made the way ``pycert prove`` makes them but without Lean: the family's own
instance file regenerated, the figures read off its headline's literals, :func:`assemble` on top, and
a fixture audit record and fixture statements (which only ``verify --kernel`` can find wrong)."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path, PurePosixPath

from pycert.analysis import fleet as routing
from pycert.certify.assemble import assemble
from pycert.certify.inputs import Locator
from pycert.certify.provenance import certificate_provenance
from pycert.certify.verify import own_library
from pycert.core.files import file_sha256
from pycert.core.schema import AuditInfo, BackendInfo, Certificate, InputFile, TheoremStatement
from pycert.data.traces import read_trace
from pycert.families import FAMILIES
from pycert.families.base import Prepared
from pycert.families.fleet import host_list_path
from pycert.families.fleet import names as fleet_names
from pycert.lean.sources import library_signatures, statement_literals, theorem_signatures

SIGNATURES = library_signatures(own_library())
BACKEND = BackendInfo(kind="wasm", lean_version="4.28.0-pre", lean_commit="38f3c0c45b8df6da2652faff6dcaa15afb5a6981",
                      node_version="v24.0.0")


def fixture_statements(theorems: tuple[str, ...] | list[str], extra: dict[str, str] | None = None
                       ) -> dict[str, TheoremStatement]:
    """The real source signatures (the library's, and ``extra``'s: the instance's headline), what plain
    verify checks; a printed statement and type digest that only ``--kernel`` can find wrong."""
    signatures = {**SIGNATURES, **(extra or {})}
    return {t: TheoremStatement(signature=signatures[t], statement=f"{t} : (fixture)", type_sha256="0" * 64)
            for t in theorems}


def trace_input(path: Path, root: Path) -> InputFile:
    """A trace as a certificate in ``root`` names it: inside, by its path; outside, by its name."""
    inside = path.resolve().is_relative_to(root.resolve())
    return InputFile(role="trace", path=path.resolve().relative_to(root.resolve()).as_posix() if inside else path.name,
                     sha256=file_sha256(path), external=not inside)


def make_cert(cert_id: str, family: str, parameters: dict | None = None, primary: list[InputFile] | None = None,
              root: Path | None = None, library: str | None = None, figures: dict[str, Fraction] | None = None,
              external: dict[str, Path] | None = None) -> Certificate:
    """A genuine certificate of ``family`` with these parameters and primary inputs (found under ``root``,
    an external one in ``external``); ``figures`` replaces the figures (a forgery)."""
    claim = FAMILIES[family]
    params = claim.params.model_validate(parameters or {})
    primary = primary or []
    read = Locator(root=root or Path("/nonexistent"), external=external or {})
    inst = claim.instance(params, primary)
    if inst is None:  # a family of observations (engine, leak): no instance, figures from its inputs alone
        inputs, signatures, kernel = list(primary), None, {}
    else:
        files = claim.derived_files(params, primary, read)
        data = files[inst.path]
        parts = [InputFile(role="lean", path=path, sha256=hashlib.sha256(part).hexdigest(), derived_from="trace")
                 for path, part in files.items() if path != inst.path]  # a big trace's shards or pieces, as prove names them
        inputs = [*primary, inst.input(hashlib.sha256(data).hexdigest()), *parts]
        signatures = theorem_signatures(data.decode("utf-8"))
        literals = statement_literals(signatures[inst.headline], claim.predicate(params))
        assert literals is not None, signatures[inst.headline]
        kernel = claim.kernel_figures(literals, inst.headline, params)
    if figures is None:
        figures = claim.figures(params, kernel, inputs, read)
    p = Prepared(claim=claim, id=cert_id, parameters=params, headline="", inputs=inputs, figures=figures)
    theorems = p.derived().theorems
    return assemble(p, BACKEND,
                    AuditInfo(verdict="pass", axioms=["propext"], axioms_by_theorem={t: ["propext"] for t in theorems}),
                    fixture_statements(theorems, signatures),
                    certificate_provenance().model_copy(update={"library_sha256": library} if library else {}))


def instance_bytes(cert: Certificate, root: Path | None = None, external: dict[str, Path] | None = None) -> bytes:
    """The instance file a certificate rests on, as the family regenerates it."""
    claim = FAMILIES[cert.family]
    return claim.regenerate(cert.parameters, cert.inputs, Locator(root=root or Path("/nonexistent"),
                                                                 external=external or {}))


def make_fleet_cert(trace: Path, root: Path, hosts: int, capacity: int, route: str = "round-robin",
                    piece_refs: int | None = None, trace_format: str = "auto", block_tokens: int | None = None,
                    sort: bool = False) -> tuple[Certificate, dict[str, bytes]]:
    """A genuine fleet certificate of the trace at ``trace`` (found under ``root``), read as ``--format``,
    ``--block-tokens`` and ``--sort`` say, made as prove makes it but without Lean: the host list, the composition
    and its parts regenerated, the figures read off the headline's literals, fixture audit and statements; with
    every derived file's bytes by path."""
    from pycert.families.fleet import derive as fleet_derive  # numpy, numba: only for a fleet certificate

    t = read_trace(trace, trace_format, block_tokens, sort=sort)
    r = routing.parse_routing(route)
    s = fleet_derive.split(t, r, hosts, fleet_derive.values(trace, r))
    cert_id, composition = fleet_names(PurePosixPath(trace.name), route, hosts, capacity)
    params, _ = fleet_derive.planned(s, r, hosts, capacity, piece_refs, PurePosixPath(trace.name), composition)
    primary = trace_input(trace, root)
    read = Locator(root=root, external={})
    claim = FAMILIES["fleet"]
    inst = claim.instance(params, [primary])
    listed = routing.host_list(s.hosts_of)
    hosts_input = InputFile(role="hosts", path=host_list_path(cert_id), sha256=hashlib.sha256(listed).hexdigest(),
                            derived_from="trace")
    files = claim.derived_files(params, [primary, hosts_input], read)
    order = [w[1] for w in claim.expected_inputs(params, [primary]) if w[0] == "lean"]
    inputs = [primary, hosts_input, *(InputFile(role="lean", path=p, sha256=hashlib.sha256(files[p]).hexdigest(),
                                                derived_from="trace") for p in order)]
    signatures = theorem_signatures(files[inst.path].decode())
    literals = statement_literals(signatures[inst.headline], claim.predicate(params))
    assert literals is not None
    kernel = claim.kernel_figures(literals, inst.headline, params)
    figures = claim.figures(params, kernel, inputs, read)
    p = Prepared(claim=claim, id=cert_id, parameters=params, headline="", inputs=inputs, figures=figures)
    theorems = p.derived().theorems
    cert = assemble(p, BACKEND, AuditInfo(verdict="pass", axioms=["propext"], axioms_by_theorem={x: ["propext"] for x in theorems}),
                    fixture_statements(theorems, signatures), certificate_provenance())
    return cert, {**files, host_list_path(cert_id): listed}
