"""The family interface, in two halves: a pure :class:`Claim` and a :class:`Producer` with effects.

A **claim** is everything a certificate of the family says about itself, as functions of data: its
typed parameters and certificate model, the inputs a certificate must name (:meth:`Claim.required`),
the Lean theorems it rests on, its sentence, its limits (``does_not_prove``), each figure's evidence,
the figures recomputed from the inputs (:meth:`Claim.figures`) and the bytes of every derived input
(:meth:`Claim.regenerate`). ``pycert prove`` and ``pycert verify`` call the same claim, so they cannot
disagree about a figure or a sentence: prove writes :meth:`Claim.derive`'s output, verify derives it
again and compares.

A **producer** makes certificates: it declares its own command-line options (an option a family
does not take is a usage error), refuses a setting that could only end badly before anything runs,
and prepares each certificate's instance data and Lean files (:meth:`Producer.prepare`: reading
traces, running solvers, emitting). Claims import what their figures need lazily, so that reading
one certificate does not import every family's engine (BENCHMARKS.md, start-up).
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from pycert.core.errors import Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root, file_sha256
from pycert.core.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo

Progress = Callable[[str], None]


class Options(BaseModel):
    """A family's command-line options as a typed value (``pycert prove <family> ...``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Setting:
    """What a producer may use: the certificate directory (input paths are relative to it), the staging
    directory its emitted files go to (the run moves them into ``out_dir`` only when their certificate
    holds), its family's options, progress."""

    out_dir: Path
    stage: Path | None = None
    options: Options = field(default_factory=Options)
    progress: Progress = lambda _m: None
    backend: str | None = None
    timeout: float = 1800.0
    """The run's Lean backend and seconds per Lean process, for a producer that checks Lean files while it
    prepares them (the shards of a big trace)."""

    @property
    def root(self) -> Path:
        """What input paths are relative to: :func:`~pycert.core.files.certificate_root` of ``out_dir``."""
        return certificate_root(self.out_dir)

    def emit(self, rel: Path, data: bytes) -> Path:
        """Write an emitted file at ``rel`` (relative to the certificate directory) into the stage."""
        path = (self.stage or self.out_dir) / rel
        atomic_write(path, data)
        return path

    def emitted(self, role: str, rel: Path, derived_from: str | None = None, sha256: str | None = None) -> InputFile:
        """An emitted file as a certificate names it: by ``rel``, with the sha256 of what was written."""
        path = (self.stage or self.out_dir) / rel
        return InputFile(role=role, path=rel.as_posix(), sha256=sha256 or file_sha256(path), derived_from=derived_from)


@dataclass(frozen=True)
class Derived:
    """What a certificate says about itself, derived from its family, parameters, figures and inputs:
    ``pycert prove`` writes exactly this and ``pycert verify`` recomputes it, so no text is trusted."""

    claim: str
    theorems: tuple[str, ...]
    does_not_prove: tuple[str, ...]
    known_by: Mapping[str, str]
    evidence: Mapping[str, EvidenceState]


class Reader(Protocol):
    """Where a claim reads a certificate's inputs: verify's locator, confined to the certificate's
    directory (:class:`pycert.certify.inputs.Locator`), or a producer's own files."""

    def locate(self, inp: InputFile) -> Path: ...


class Claim(ABC):
    """One family's claims, as pure functions of parameters, figures and inputs."""

    name: ClassVar[str]
    params: ClassVar[type[Params]]
    certificate: ClassVar[type[Certificate]]
    lean_module: ClassVar[str]
    """The library module (``lean/Pycert/<Name>.lean``) the family's theorems live in."""
    theorem_names: ClassVar[tuple[str, ...]]
    """Fully qualified Lean theorems every certificate of the family rests on."""
    limits: ClassVar[tuple[str, ...]]
    evidence_of: ClassVar[Mapping[str, tuple[EvidenceState, str]]] = {}
    """Figure name -> how that figure is known (its state, and the text naming the theorem, solver or
    library), written beside it in the certificate; a figure not listed is ``computed``."""

    @abstractmethod
    def sentence(self, params: Params, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        """The one-sentence claim."""

    def theorems(self, params: Params) -> tuple[str, ...]:
        """The theorems a certificate with these parameters rests on (public library declarations)."""
        return self.theorem_names

    def does_not_prove(self, params: Params, figures: Mapping[str, Fraction]) -> tuple[str, ...]:
        return self.limits

    def evidence(self, name: str, solver: SolverInfo | None) -> tuple[EvidenceState, str]:
        """How figure ``name`` is known, given the solver record the certificate carries."""
        return self.evidence_of.get(name, ("computed", ""))

    def derive(self, params: Params, figures: Mapping[str, Fraction], inputs: Sequence[InputFile],
               solver: SolverInfo | None = None) -> Derived:
        known = {name: self.evidence(name, solver) for name in figures}
        return Derived(claim=self.sentence(params, figures, inputs), theorems=self.theorems(params),
                       does_not_prove=self.does_not_prove(params, figures),
                       known_by={n: k[1] for n, k in known.items()}, evidence={n: k[0] for n, k in known.items()})

    @abstractmethod
    def figures(self, params: Params, inputs: Sequence[InputFile], read: Reader) -> dict[str, Fraction]:
        """Every figure of a certificate, from its parameters and inputs alone. Raises :class:`Rejected`
        when the inputs cannot be what it claims."""

    def regenerate(self, params: Params, inputs: Sequence[InputFile], inp: InputFile, read: Reader) -> bytes:
        """The bytes a ``derived_from`` input must have; the default: this family derives none."""
        raise Rejected(Rejection.mismatch(f"inputs[{inp.path}].derived_from",
                                          f"a {self.name} {inp.role} file pycert can regenerate",
                                          f"{inp.role} derived from {inp.derived_from}"))


@dataclass
class Prepared:
    """A certificate before the kernel and the audit have answered."""

    claim: Claim
    id: str
    parameters: Params
    figures: dict[str, Fraction]
    headline: str
    inputs: list[InputFile] = field(default_factory=list)
    lean_files: list[Path] = field(default_factory=list)
    """Emitted instance files the kernel must accept (checked in one build with every family's)."""
    solver: SolverInfo | None = None
    rejection: Rejection | None = None
    """Why the claim does not hold, once some check said so."""
    unchecked: str | None = None
    """Why a check the claim needs did not run to its end (out of memory, killed, timed out): the claim
    is neither written nor rejected."""

    def derived(self) -> Derived:
        return self.claim.derive(self.parameters, self.figures, self.inputs, self.solver)


class Producer(ABC):
    """Makes the certificates of one family: options, a check of the setting, instance data."""

    claim: ClassVar[Claim]
    options: ClassVar[type[Options]] = Options

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """The family's own ``pycert prove`` options (none by default)."""

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> Options:
        """The family's options from the parsed command line; ``everything``: the run is ``prove all``."""
        return self.options.model_validate({k: getattr(args, k) for k in self.options.model_fields if hasattr(args, k)})

    def check(self, setting: Setting) -> None:
        """Refuse, with an :class:`InputError` naming the culprits, a run that could only end badly (two
        inputs that would make one certificate), before anything is built or written."""

    @abstractmethod
    def prepare(self, setting: Setting) -> list[Prepared]:
        """The instance data and Lean instance files of the certificates ``pycert prove`` makes."""


def input_file(role: str, path: Path, root: Path, derived_from: str | None = None, sha256: str | None = None) -> InputFile:
    """An input as a certificate names it: by path relative to ``root`` (the certificate directory) with
    its sha256, or, for a file outside it (a user's trace), by its file name alone (``external``): a
    certificate never records where a file sat on the machine that made it, so the directory can be
    renamed, moved or sent, and verify reads outside it only the external files, by name."""
    real, root = path.resolve(), root.resolve()
    inside = real.is_relative_to(root)
    return InputFile(role=role, path=real.relative_to(root).as_posix() if inside else path.name,
                     sha256=sha256 or file_sha256(path), external=not inside, derived_from=derived_from)


def input_path(inputs: Sequence[InputFile], role: str, read: Reader) -> Path:
    """The one input of ``role``, located."""
    found = [i for i in inputs if i.role == role]
    if len(found) != 1:
        raise Rejected(Rejection.mismatch(f"inputs[role={role}]", f"exactly one {role} input", f"{len(found)}"))
    return read.locate(found[0])

