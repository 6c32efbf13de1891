"""The Family interface: everything pycert knows about one family of certified claims.

A family names its Lean file (``lean_module``) and the theorems a certificate rests on, its typed
parameters, how it prepares instance data and Lean instance files for ``pycert prove``
(:meth:`Family.prepare`), how ``pycert verify`` recomputes its figures from a certificate and its
inputs alone (:meth:`Family.recompute`) and regenerates any input derived from the others
(:meth:`Family.regenerate`), and what its claims do not prove. Defining a subclass also defines the
family's certificate model: :class:`~pycert.certify.schema.Certificate` with ``family`` narrowed
to the family's name and ``parameters`` to its :class:`Params`, so a certificate is a pydantic union
keyed on ``family`` (:mod:`pycert.certify.documents`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import create_model

from pycert.certify.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root, file_sha256

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Setting:
    """What :meth:`Family.prepare` may use: the certificate directory (emitted files go under it, and
    input paths are relative to it), the traces asked for, progress."""

    out_dir: Path
    traces: tuple[Path, ...] = ()
    progress: Progress = lambda _m: None
    backend: str | None = None
    timeout: float = 1800.0
    """Seconds per Lean process, for a family that checks Lean files while it prepares them (shards)."""
    shard_refs: int | None = None
    """References per shard of a big trace (None: chosen from measured memory)."""
    ray_address: str | None = None
    """The Ray cluster shards are checked on (None: a local one pycert starts)."""

    @property
    def root(self) -> Path:
        """What input paths are relative to: :func:`~pycert.core.files.certificate_root` of ``out_dir``."""
        return certificate_root(self.out_dir)


@dataclass(frozen=True)
class Derived:
    """What a certificate says about itself, derived from its family, parameters, figures and inputs:
    ``pycert prove`` writes exactly this and ``pycert verify`` recomputes it, so no text is trusted."""

    claim: str
    theorems: tuple[str, ...]
    does_not_prove: tuple[str, ...]
    known_by: Mapping[str, str]
    evidence: Mapping[str, EvidenceState]


@dataclass
class Prepared:
    """A certificate before the kernel and the audit have answered."""

    family: Family
    id: str
    parameters: Params
    figures: dict[str, Fraction]
    headline: str
    inputs: list[InputFile] = field(default_factory=list)
    lean_files: list[Path] = field(default_factory=list)
    """Emitted instance files the kernel must accept (checked in one batch with every family's)."""
    solver: SolverInfo | None = None
    rejection: Rejection | None = None
    """Why the claim does not hold, once some check said so."""
    unchecked: str | None = None
    """Why a check the claim needs did not run to its end (out of memory, killed, timed out): the claim
    is neither written nor rejected."""

    def derived(self) -> Derived:
        return self.family.derive(self.parameters, self.figures, self.inputs, self.solver)


class Family(ABC):
    """One family of claims. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    params: ClassVar[type[Params]]
    lean_module: ClassVar[str]
    """The library module (``lean/Pycert/<Name>.lean``) the family's theorems live in."""
    theorems: ClassVar[tuple[str, ...]]
    """Fully qualified Lean theorems every certificate of the family rests on."""
    does_not_prove: ClassVar[tuple[str, ...]]
    evidence: ClassVar[Mapping[str, tuple[EvidenceState, str]]] = {}
    """Figure name -> how that figure is known (its state, and the text naming the theorem, solver or
    library), written beside it in the certificate; a figure not listed is ``computed``."""
    certificate_model: ClassVar[type[Certificate]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        title = "".join(part.capitalize() for part in cls.name.split("-"))
        cls.certificate_model = create_model(
            f"{title}Certificate", __base__=Certificate, __doc__=f"A certificate of the {cls.name} family.",
            family=(Literal[cls.name], ...), parameters=(cls.params, ...),
        )

    @abstractmethod
    def claim(self, params: Params, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        """The one-sentence claim, a pure function of the parameters, the figures and the inputs."""

    def required_theorems(self, params: Params) -> tuple[str, ...]:
        """The theorems a certificate with these parameters rests on (public library declarations)."""
        return self.theorems

    def limits(self, params: Params, figures: Mapping[str, Fraction]) -> tuple[str, ...]:
        """The ``does_not_prove`` lines of a certificate with these parameters and figures."""
        return self.does_not_prove

    def figure_evidence(self, name: str, solver: SolverInfo | None) -> tuple[EvidenceState, str]:
        """How figure ``name`` is known, given the solver record the certificate carries."""
        return self.evidence.get(name, ("computed", ""))

    def derive(self, params: Params, figures: Mapping[str, Fraction], inputs: Sequence[InputFile],
               solver: SolverInfo | None = None) -> Derived:
        known = {name: self.figure_evidence(name, solver) for name in figures}
        return Derived(claim=self.claim(params, figures, inputs), theorems=self.required_theorems(params),
                       does_not_prove=self.limits(params, figures), known_by={n: k[1] for n, k in known.items()},
                       evidence={n: k[0] for n, k in known.items()})

    def check_setting(self, setting: Setting) -> None:
        """Refuse, with an :class:`InputError` naming the culprits, a run that could only end badly (two
        inputs that would make one certificate), before anything is built or written."""

    @abstractmethod
    def prepare(self, setting: Setting) -> list[Prepared]:
        """The instance data and Lean instance files of the certificates ``pycert prove`` makes."""

    @abstractmethod
    def recompute(self, cert: Certificate, where: Locator) -> dict[str, Fraction]:
        """Every figure of ``cert``, from its parameters and inputs alone (found through ``where``).
        Raises :class:`~pycert.core.errors.Rejected` when the inputs cannot be what it claims."""

    def regenerate(self, cert: Certificate, inp: InputFile, where: Locator) -> bytes:
        """The bytes a ``derived_from`` input must have; the default: this family derives none."""
        raise Rejected(Rejection.mismatch(f"inputs[{inp.path}].derived_from",
                                          f"a {self.name} {inp.role} file pycert can regenerate",
                                          f"{inp.role} derived from {inp.derived_from}"))


def local_copy(path: Path, setting: Setting) -> Path:
    """``path`` when it lies under the certificate directory, else a copy in ``<out_dir>/inputs/``: a file
    pycert ships (the committed pooling instance) travels with the certificate that rests on it, and is
    never named by its place in a checkout or in site-packages."""
    if path.resolve().is_relative_to(setting.root):
        return path
    copy = setting.out_dir / "inputs" / path.name
    data = path.read_bytes()
    if not copy.is_file() or copy.read_bytes() != data:
        atomic_write(copy, data)
    return copy


def input_file(role: str, path: Path, root: Path, derived_from: str | None = None) -> InputFile:
    """An input as a certificate names it: by path relative to ``root`` (the certificate directory) with
    its sha256, or, for a file outside it (a user's trace), by its file name alone (``external``): a
    certificate never records where a file sat on the machine that made it, so the directory can be
    renamed, moved or sent, and verify reads outside it only the external files, by name."""
    real, root = path.resolve(), root.resolve()
    inside = real.is_relative_to(root)
    return InputFile(role=role, path=real.relative_to(root).as_posix() if inside else path.name,
                     sha256=file_sha256(path), external=not inside, derived_from=derived_from)


@dataclass(frozen=True)
class Locator:
    """Where verify finds a certificate's inputs: under ``root``, the certificate's directory (symlinks
    resolved, nothing outside it), and an external one where the user handed it in (``--input
    NAME=PATH``), else by its file name beside that directory (where ``pycert prove --trace NAME --out
    DIR`` run from the trace's directory left it). Either way its sha256 decides, not where it was."""

    root: Path
    external: Mapping[str, Path] = field(default_factory=dict)

    def locate(self, inp: InputFile) -> Path:
        """The file to read, or :class:`InputError` (exit 2) before anything is opened."""
        root = self.root.resolve()
        if inp.external:
            if (given := self.external.get(inp.path)) is not None:
                return given
            if (beside := root.parent / inp.path).is_file():
                return beside
            raise InputError(f"external {inp.role} {inp.path} is not beside the certificate directory "
                             f"({root.parent}): give it with --input {inp.path}=PATH")
        real = (root / inp.path).resolve()
        if not real.is_relative_to(root):
            raise InputError(f"input {inp.path} resolves outside the certificate's directory ({root}): refused, not read")
        return real


def input_path(cert: Certificate, role: str, where: Locator) -> Path:
    """The one input of ``role``, located (:meth:`Locator.locate`)."""
    found = [i for i in cert.inputs if i.role == role]
    if len(found) != 1:
        raise Rejected(Rejection.mismatch(f"inputs[role={role}]", f"exactly one {role} input", f"{len(found)}"))
    return where.locate(found[0])
