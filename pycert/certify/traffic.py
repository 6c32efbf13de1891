"""Which certificates speak of which traffic: every trace the page's certificates name, read one way each
(:func:`trace_facts`), and one card per traffic (:func:`one_traffic`: readings of one file to the same block
references merged, the others each saying how they stand to one another)."""

from __future__ import annotations

from pycert.certify.cards import TraceFacts, figures
from pycert.core.schema import Certificate
from pycert.families.traces import TraceReading


def reading_of(cert: Certificate) -> tuple[str | None, int | None, bool] | None:
    """How a certificate read its trace file into block references (the layout, the tokens a block, whether in
    timestamp order), for a family that records it; None for one that does not (an engine's replay log, the
    first-touch cut)."""
    p = cert.parameters
    return (p.trace_format, p.block_tokens, p.trace_order == "timestamp") if isinstance(p, TraceReading) else None


def trace_facts(certs: list[Certificate], not_verified: dict[str, str]) -> dict[tuple[str, object], TraceFacts]:
    """Every trace the certificates name, read one way (by sha256 and :func:`reading_of`, in the order first
    named), and what its certificates that verified in this run prove of it: nothing that did not verify lends
    a figure (it is named, with why), and no certificate lends one to a card of the same file read another way
    (at another block size the references are other ones). A certificate that records no reading (an engine's)
    joins the first card of its trace with as many references as it counts, else a card of its own."""
    facts: dict[tuple[str, object], TraceFacts] = {}
    recorded = [c for c in certs if reading_of(c) is not None]
    for cert in recorded + [c for c in certs if reading_of(c) is None]:
        figs, reading = figures(cert), reading_of(cert)
        for i in cert.inputs:
            if i.role != "trace":
                continue
            key: tuple[str, object] = (i.sha256, reading)
            if reading is None:
                refs = figs["refs"].value if "refs" in figs else None
                key = next((k for k, f in facts.items() if k[0] == i.sha256 and f.refs in (None, refs)), key)
            fact = facts.setdefault(key, TraceFacts(name=i.path, sha256=i.sha256, reading=reading, source=i))
            if cert.id in not_verified:
                fact.unverified[cert.id] = not_verified[cert.id]
            elif cert.family == "ceiling" and {"refs", "distinct", "max_hits"} <= set(figs):
                fact.ceiling = cert
            elif cert.family == "capacity" and {"refs", "capacity_blocks"} <= set(figs) and (
                    "max_hits" in figs or "bypass_hits" in figs):
                fact.capacity[figs["capacity_blocks"].numerator] = cert
            elif cert.family == "engine" and {"refs", "engine_hits", "bypass_hits"} <= set(figs):
                fact.engines.append(cert)
            elif cert.family == "isolation-cost" and {"capacity_blocks", "shared_hits", "salted_hits"} <= set(figs):
                fact.salts.append(cert)
    return facts


def one_traffic(facts: list[TraceFacts]) -> list[TraceFacts]:
    """One card per traffic. Readings of one file whose block references are one sequence (the same curve
    fingerprint: the file read in two layouts) are merged, in the order first named, the one with prompt lengths
    leading (its curve gives the token figures): certificates of the same references say the same of them, so
    each lends its figures to the one card. Two files with the same block references (a trace and its ``trace
    convert`` copy) stay two cards, each with a line saying they are one traffic; so does a file read two ways
    to other references, or without curves (``--no-curves``: nothing tells), each saying so."""
    groups: dict[tuple[str, str], list[TraceFacts]] = {}
    order: list[list[TraceFacts]] = []
    for f in facts:
        key = (f.sha256, f.curve.fingerprint if f.curve is not None and f.curve.fingerprint else f"alone-{id(f)}")
        if key not in groups:
            groups[key] = []
            order.append(groups[key])
        groups[key].append(f)
    out = [_merged(g) for g in order]
    for f in out:
        for other in out:
            if other is f:
                continue
            same = f.curve is not None and other.curve is not None and f.curve.fingerprint == other.curve.fingerprint
            if same:
                f.notes.append(f"One traffic with {other.reading_words()} (another file, its own card): the same "
                               f"{f.curve.lru.refs:,} block references, block for block.")  # type: ignore[union-attr]
            elif other.sha256 == f.sha256:
                known = f.curve is not None and other.curve is not None
                f.notes.append(f"The same file read another way, {other.reading_words()}, is another card" +
                               (": other block references." if known else " (with --no-curves nothing here tells "
                                "whether they are the same block references)."))
    return out


def _merged(group: list[TraceFacts]) -> TraceFacts:
    if len(group) == 1:
        return group[0]
    lead = next((f for f in group if f.curve is not None and f.curve.prompt_tokens), group[0])
    rest = [f for f in group if f is not lead]
    out = TraceFacts(name=lead.name, sha256=lead.sha256, reading=lead.reading, source=lead.source, curve=lead.curve,
                     ceiling=lead.ceiling or next((f.ceiling for f in rest if f.ceiling is not None), None),
                     capacity=dict(lead.capacity), engines=list(lead.engines), salts=list(lead.salts),
                     unverified=dict(lead.unverified), also=[f.reading_words() for f in rest])
    refs = lead.curve.lru.refs if lead.curve is not None else lead.refs  # a group of two has curves: its fingerprint
    out.notes.append(f"One traffic: {lead.reading_words()} and {', '.join(out.also)} read the same file to the same "
                     f"{refs:,} block references, so their certificates share this card.")
    for f in rest:
        for c, cert in f.capacity.items():
            out.capacity.setdefault(c, cert)
        out.engines += f.engines
        out.salts += f.salts
        out.unverified |= f.unverified
    return out
