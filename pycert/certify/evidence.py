"""Which figures of an offload report certificates prove: the ceiling of the trace (the best at any size)
and its optimum at the report's GPU capacity (the capacity family), each found in a certificate directory,
about the same trace (its sha256), and verified offline before it counts; and a real engine's own hits at
that capacity (the engine family), beside the optimum those certificates prove."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path, PurePosixPath

from pycert.analysis.offload import EngineLine, OffloadReport
from pycert.certify.documents import load_certificate
from pycert.certify.verify import verify_certificate
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.exact import Ratio
from pycert.core.gate import entries
from pycert.core.schema import Certificate
from pycert.families.engine.beside import beside

CEILING_FIGURES = ("refs", "distinct", "cold_miss_floor", "ceiling")
"""What a ceiling certificate proves of the report: its kernel-checked counts, and the rates exact
arithmetic makes of them."""
CAPACITY_FIGURES = ("gpu_only_belady_hit_rate", "gpu_only_bypass_hit_rate")
"""What a capacity certificate at the report's capacity proves: no cache that stores every missed block
beats the first hit rate and one reaches it (kernel, both ways, for a certificate with Belady's pairs as
a witness; the upper bound only, with Belady's MIN computed and cross-checked, for one without), and, for
a certificate of both models, the same of caches with bypass and the second. The rates in
tokens stay computed: the kernel checks blocks."""


def _figure(cert: Certificate, name: str) -> Fraction:
    f = next(f for f in cert.figures if f.name == name)
    return Fraction(f.numerator, f.denominator)


def _proves(cert: Certificate, capacity: int) -> tuple[str, ...]:
    """The report's figures ``cert`` bears on at ``capacity`` blocks (an engine certificate: its own row)."""
    p = cert.parameters
    if cert.family == "ceiling":
        return CEILING_FIGURES
    if cert.family == "capacity" and p.capacity_blocks == capacity:  # type: ignore[attr-defined]
        return CAPACITY_FIGURES
    return ("engine_hit_rate",) if cert.family == "engine" and p.num_blocks == capacity else ()  # type: ignore[attr-defined]


def with_evidence(rep: OffloadReport, trace: Path | None, certs: Path) -> OffloadReport:
    """``rep`` with each primary figure's evidence state: ``kernel-checked`` where a certificate in
    ``certs`` about this trace verifies (``trace``: where the trace lies, for a certificate that names it
    as an external input) and proves it, else ``computed``. A certificate whose proved
    figure differs from the report's is a defect in one engine or the other: refused, naming both; so is
    an engine certificate whose count is above the optimum a verified capacity certificate proves."""
    if not certs.is_dir():
        raise InputError("is not a certificate directory", where=str(certs))
    fields = [n for n, v in rep.primary if not isinstance(v, str) and n not in ("granularity", "block_tokens",
                                                                                 "capacity_blocks", "host_blocks")]
    evidence = dict.fromkeys(fields, "computed")
    by: dict[str, str] = {}
    not_used: dict[str, str] = {}
    verified: dict[str, list[Certificate]] = {}
    if rep.primary.granularity != 1:
        return rep.model_copy(update={"evidence": evidence})
    for path in (entry.path for entry in entries(certs.resolve(), ".json")):
        try:  # through the gate: a link, a FIFO or /dev/zero named *.json is refused unread and listed
            cert = load_certificate(path)
        except InputError as err:
            not_used[path.name] = f"not read as a certificate: {err.message}"
            continue
        except Rejected as err:  # a JSON object that breaks the schema: say which field
            not_used[path.name] = f"not read as a certificate: {err.rejection.render()}"
            continue
        traces = [i for i in cert.inputs if i.role == "trace" and i.sha256 == rep.sha256]
        proves = _proves(cert, rep.primary.capacity_blocks)
        # a prompts trace's blocks depend on their size (an engine certificate's block_tokens is its page size)
        prompts_at = None if cert.family == "engine" else getattr(cert.parameters, "block_tokens", None)
        if not traces or not proves or prompts_at not in (None, rep.primary.block_tokens):
            continue
        given = {PurePosixPath(traces[0].path).name: trace} if trace is not None else None
        result = verify_certificate(path, inputs=given)
        if (why := result.first_problem()) is not None:
            not_used[path.name] = f"{'does not verify' if result.failures else 'not verified'}: {why}"
            continue
        verified.setdefault(cert.family, []).append(cert)
        if cert.family == "engine":
            continue
        if cert.family == "ceiling":
            proved = {"refs": _figure(cert, "refs"), "distinct": _figure(cert, "distinct")}
        else:  # a trace in pieces both ways states the model with bypass alone
            names = {f.name for f in cert.figures}
            proved = {rate: _figure(cert, figure) for rate, figure in (("gpu_only_belady_hit_rate", "max_hit_rate"),
                                                                      ("gpu_only_bypass_hit_rate", "bypass_hit_rate"))
                      if figure in names}
        for name, value in proved.items():
            ours = getattr(rep.primary, name)
            ours = Fraction(ours) if isinstance(ours, int) else ours.value
            if ours != value:
                raise Rejected(Rejection.mismatch(f"{rep.name}: {name}", f"{value} (kernel-checked in {path.name})",
                                                  f"{ours} (pycert's engine)", reason="engine-disagrees"))
        # A capacity certificate without the witness proves the bound only: the hit rate is then as the
        # certificate itself labels Belady's figure (computed and cross-checked), not kernel-checked.
        for name in proved if cert.family == "capacity" else proves:
            state = ("kernel-checked" if cert.family == "ceiling" else next(
                f.evidence for f in cert.figures if f.name == ("belady_hits" if name == "gpu_only_belady_hit_rate"
                                                               else "bypass_hits")))
            evidence[name], by[name] = state, path.name
    return rep.model_copy(update={"evidence": evidence, "evidence_by": by, "not_used": not_used,
                                  "engines": engine_lines(rep, verified)})


def engine_lines(rep: OffloadReport, verified: dict[str, list[Certificate]]) -> list[EngineLine]:
    """Each verified engine certificate beside the verified capacity and ceiling certificates of the trace."""
    [capacity, *_] = verified.get("capacity", [None])
    [ceiling, *_] = verified.get("ceiling", [None])
    out = []
    for cert in verified.get("engine", []):
        side = beside(cert, capacity, ceiling)
        if side.refs != rep.primary.refs:
            raise Rejected(Rejection.mismatch(f"{rep.name}: refs", f"{side.refs} (in {cert.filename})",
                                              f"{rep.primary.refs} (pycert's engine)", reason="engine-disagrees"))
        out.append(EngineLine(certificate=cert.filename, engine=cert.parameters.engine,  # type: ignore[attr-defined]
                              block_tokens=cert.parameters.block_tokens,  # type: ignore[attr-defined]
                              engine_hit_rate=Ratio.of(Fraction(side.engine_hits, side.refs)),
                              engine_hit_rate_tokens=None if not side.refs_tokens or side.engine_tokens is None else
                              Ratio.of(Fraction(side.engine_tokens, side.refs_tokens)), sentence=side.sentence,
                              why_no_sentence=side.why_no_sentence))
    return out
