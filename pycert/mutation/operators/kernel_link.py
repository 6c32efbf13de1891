"""The link between a certificate and what the kernel checked (issue 24): code shipped in an instance,
an instance swapped, dropped or joined by an input the family does not name, pycert's own engines off by
one (caught by prove against the kernel's literal), and a bad declaration in an instance the verifier
builds. Each must be rejected for its reason, with exit 1."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pycert.certify.verify import verify_certificate
from pycert.core.files import file_sha256
from pycert.families import FAMILIES, producer
from pycert.families.ceiling import instance_text
from pycert.families.ceiling import produce as ceiling_produce
from pycert.families.pooling import produce as pooling_produce
from pycert.mutation.operators.base import CEILING_CERT, CERT_DIR, Operator, Planned, Verdict
from pycert.prove import prove

POOLING_CERT = "pooling-committed.json"
FIRST_TOUCH_CERT = "first-touch-c256-n4000.json"


def _reforge(ctx: Any, cert: str, edit: Callable[[dict], None]) -> Path:
    path = ctx.repo / CERT_DIR / cert
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    ctx.forge_manifest()
    return path


def _expect(res: Any, pattern: str, what: str) -> Verdict:
    if res.status != "rejected":
        return "survived", f"{what}: {res.status}"
    hit = next((f for f in res.failures if re.search(pattern, f"{f.subject} [{f.reason}]")), None)
    return ("killed", hit.render()) if hit else ("survived", f"rejected, but not on {pattern}: {res.failures[0].render()}")


def eval_in_instance(ctx: Any) -> Verdict:
    """``#eval`` that writes a file, appended to the shipped wall, its hash and manifest forged: verify
    --kernel must reject it and never run it."""
    marker = ctx.repo / "written-by-a-certificate"
    wall = ctx.repo / CERT_DIR / "lean" / "PoolingWall.lean"
    wall.write_text(wall.read_text() + f'\n#eval (IO.FS.writeFile "{marker}" "written by a certificate" : IO Unit)\n')
    path = _reforge(ctx, POOLING_CERT, lambda d: d["inputs"][1].update(sha256=file_sha256(wall)))
    res = verify_certificate(path, kernel=True, backend=ctx.backend_name)
    if marker.exists():
        return "survived", "the shipped #eval ran: it wrote its file"
    return _expect(res, r"regenerated from the instance", "verify --kernel")


def swapped_instance(ctx: Any) -> Verdict:
    lean = ctx.repo / CERT_DIR / "lean" / "CeilingSyntheticSeed0.lean"
    lean.write_bytes(instance_text([7, 7], "0" * 64, "CeilingSyntheticSeed0"))
    path = _reforge(ctx, CEILING_CERT, lambda d: d["inputs"][1].update(sha256=file_sha256(lean), derived_from=None))
    return _expect(verify_certificate(path), r"\[(missing|extra)-input\]", "verify")


def dropped_instance(ctx: Any) -> Verdict:
    return _expect(verify_certificate(_reforge(ctx, CEILING_CERT, lambda d: d["inputs"].pop())),
                   r"\[missing-input\]", "verify")


def extra_input(ctx: Any) -> Verdict:
    notes = ctx.repo / CERT_DIR / "notes.txt"
    notes.write_text("trust me\n")
    entry = {"role": "trace", "path": "notes.txt", "sha256": file_sha256(notes)}
    return _expect(verify_certificate(_reforge(ctx, POOLING_CERT, lambda d: d["inputs"].append(entry))),
                   r"\[extra-input\]", "verify")


@contextlib.contextmanager
def _patched(module: Any, name: str, wrap: Callable[[Any], Any]) -> Iterator[None]:
    real = getattr(module, name)
    setattr(module, name, wrap(real))
    try:
        yield
    finally:
        setattr(module, name, real)


@contextlib.contextmanager
def _no_memo() -> Iterator[None]:
    before = os.environ.get("PYCERT_MEMO")
    os.environ["PYCERT_MEMO"] = "0"  # the solvers must run: a kept answer would hide the patched engine
    try:
        yield
    finally:
        os.environ.pop("PYCERT_MEMO") if before is None else os.environ.__setitem__("PYCERT_MEMO", before)


def _prove_expect(ctx: Any, family: str, kernel_number: str) -> Verdict:
    """prove the family into a scratch directory: the figures stage must stop the claim, naming the
    kernel's number."""
    chosen = producer(family)
    res = prove([(chosen, chosen.options())], backend=ctx.backend_name, out_dir=ctx.repo / "proved")
    stage = next((s for s in res.stages if s.name == "figures"), None)
    if res.ok or stage is None or stage.status != "rejected":
        return "survived", f"prove: {'ok' if res.ok else 'rejected elsewhere'}; figures stage {stage.status if stage else '-'}"
    if kernel_number not in stage.detail:
        return "survived", f"rejected, but the figures stage does not name {kernel_number}: {stage.detail[:200]}"
    if res.written:
        return "survived", f"prove still wrote {res.written}"
    return "killed", stage.detail[:300]


def engine_off(figure: str, delta: int, kernel: int) -> Callable[[Any], Verdict]:
    def run(ctx: Any) -> Verdict:
        def wrap(real: Any) -> Any:
            return lambda trace: {**real(trace), figure: real(trace)[figure] + delta}

        with _patched(ceiling_produce, "engine_figures", wrap):
            return _prove_expect(ctx, "ceiling", f"expected {kernel} (the Lean kernel)")
    return run


def per_instance_optimum_minus_one(ctx: Any) -> Verdict:
    """A defect shared by every Python check of the per-instance side (the model, the replay, Belady and
    the sharing graph all one miss short): they agree with each other, and only the kernel's wall,
    computed from the emitted instance, can object."""
    def wrap(real: Any) -> Any:
        def solve(*a: Any, **k: Any) -> Any:
            found = real(*a, **k)
            per = found.per_instance
            solved = {r: getattr(per, r).model_copy(update={"objective": getattr(per, r).objective - 1,
                                                           "bound": getattr(per, r).bound - 1}) for r in ("cpsat", "highs")}
            fewer = per.model_copy(update={**solved, "replay_misses": per.replay_misses - 1,
                                           "belady_misses": per.belady_misses - 1, "distinct": per.distinct - 1})
            sharing = found.sharing.model_copy(update={"per_instance_wall": found.sharing.per_instance_wall - 1})
            return found.model_copy(update={"per_instance": fewer, "sharing": sharing})
        return solve

    with _no_memo(), _patched(pooling_produce, "solve", wrap):
        return _prove_expect(ctx, "pooling", "(the kernel's per_instance_wall)")


def bad_declaration(planted: str, reason: str) -> Callable[[Any], Verdict]:
    """An emitter that writes ``planted`` into the first-touch instance, its output recorded by the
    certificate: verify --kernel builds it and its audit of every declaration built must name it."""
    def run(ctx: Any) -> Verdict:
        claim = FAMILIES["first-touch"]
        cls = type(claim)

        def wrap(real: Any) -> Any:
            def regenerate(self: Any, params: Any, inputs: Any, read: Any) -> bytes:
                text = real(self, params, inputs, read).decode()
                return text.replace("end Pycert.Instance.", planted + "\nend Pycert.Instance.", 1).encode()
            return regenerate

        with _patched(cls, "regenerate", wrap):
            source = claim.regenerate(claim.params.model_validate({"c": 256, "n": 4000}), [], None)
            path = _reforge(ctx, FIRST_TOUCH_CERT, lambda d: d["inputs"][0].update(
                sha256=hashlib.sha256(source).hexdigest()))
            (ctx.repo / CERT_DIR / "lean" / "FirstTouchC256N4000.lean").unlink(missing_ok=True)
            res = verify_certificate(path, kernel=True, backend=ctx.backend_name)
        return _expect(res, rf"\[{reason}\]", "verify --kernel")
    return run


class KernelLink(Operator):
    """Cut the link between a certificate and what the kernel checked; verify, verify --kernel or prove
    must object, for the reason named."""

    name = "kernel-link"

    def plan(self, ctx: Any) -> list[Planned]:
        add = self.add
        add("link-eval-in-instance", "verify-kernel", "an #eval that writes a file, appended to the shipped pooling "
            "wall (hash and manifest forged)", "rejected, the instance regenerated; the file never written",
            "certificates/lean/PoolingWall.lean", run=eval_in_instance)
        add("link-swapped-instance", "verify", "the ceiling instance swapped for one of [7, 7], derived_from nulled "
            "(hash and manifest forged)", "rejected: not the inputs the family names", "certificates/lean", run=swapped_instance)
        add("link-dropped-instance", "verify", "the ceiling instance dropped from the inputs (manifest forged)",
            "rejected: a missing input", "certificates", run=dropped_instance)
        add("link-extra-input", "verify", "an input the family does not name, added (manifest forged)",
            "rejected: an extra input", "certificates", run=extra_input)
        add("link-engine-distinct+1", "prove", "the trace engine counts one distinct block too many",
            "prove stops, naming the kernel's 1356", "pycert/analysis/stats.py", run=engine_off("distinct", 1, 1356))
        add("link-engine-refs-1", "prove", "the trace engine counts one reference too few",
            "prove stops, naming the kernel's 5339", "pycert/analysis/stats.py", run=engine_off("refs", -1, 5339))
        add("link-per-instance-optimum-1", "prove", "the solvers' per-instance optimum one below the truth",
            "prove stops, naming the kernel's wall", "pycert/solvers/optima.py", run=per_instance_optimum_minus_one)
        add("link-axiom-in-instance", "verify-kernel", "an axiom and a theorem resting on it, in the emitted "
            "first-touch instance (recorded hash forged)", "verify --kernel's audit names it",
            "pycert/families/first_touch/__init__.py",
            run=bad_declaration("axiom planted : 2 + 2 = 5\npublic theorem uses_planted : 2 + 2 = 5 := planted\n",
                                "(project-)?axiom"))
        add("link-native-decide-in-instance", "verify-kernel", "a theorem proved by native_decide in the emitted "
            "first-touch instance (recorded hash forged)", "verify --kernel's audit names it",
            "pycert/families/first_touch/__init__.py",
            run=bad_declaration("public theorem decided : 10 + 10 = 20 := by native_decide\n", "native-code"))
        return self.plans
