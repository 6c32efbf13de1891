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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import create_model

from pycert.certify.schema import Certificate, InputFile, Params, SolverInfo
from pycert.core.errors import Rejected, Rejection
from pycert.core.files import atomic_write, file_sha256, relative_to_root

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Setting:
    """What :meth:`Family.prepare` may use: the certificates' root (input paths are relative to it), the
    certificate directory (emitted files go under it), the traces asked for, progress."""

    root: Path
    out_dir: Path
    traces: tuple[Path, ...] = ()
    progress: Progress = lambda _m: None


@dataclass
class Prepared:
    """A certificate before the kernel and the audit have answered."""

    family: Family
    id: str
    claim: str
    parameters: Params
    figures: dict[str, Fraction]
    headline: str
    inputs: list[InputFile] = field(default_factory=list)
    lean_files: list[Path] = field(default_factory=list)
    """Emitted instance files the kernel must accept (checked in one batch with every family's)."""
    solver: SolverInfo | None = None
    rejection: Rejection | None = None
    """Why the claim does not hold, once some check said so."""


class Family(ABC):
    """One family of claims. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    params: ClassVar[type[Params]]
    lean_module: ClassVar[str]
    """The library module (``lean/Pycert/<Name>.lean``) the family's theorems live in."""
    theorems: ClassVar[tuple[str, ...]]
    """Fully qualified Lean theorems every certificate of the family rests on."""
    does_not_prove: ClassVar[tuple[str, ...]]
    known_by: ClassVar[Mapping[str, str]] = {}
    """Figure name -> how that figure is known, written beside it in the certificate."""
    certificate_model: ClassVar[type[Certificate]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        title = "".join(part.capitalize() for part in cls.name.split("-"))
        cls.certificate_model = create_model(
            f"{title}Certificate", __base__=Certificate, __doc__=f"A certificate of the {cls.name} family.",
            family=(Literal[cls.name], ...), parameters=(cls.params, ...),
        )

    @abstractmethod
    def prepare(self, setting: Setting) -> list[Prepared]:
        """The instance data and Lean instance files of the certificates ``pycert prove`` makes."""

    @abstractmethod
    def recompute(self, cert: Certificate, root: Path) -> dict[str, Fraction]:
        """Every figure of ``cert``, from its parameters and inputs alone (paths relative to ``root``).
        Raises :class:`~pycert.core.errors.Rejected` when the inputs cannot be what it claims."""

    def regenerate(self, cert: Certificate, inp: InputFile, root: Path) -> bytes:
        """The bytes a ``derived_from`` input must have; the default: this family derives none."""
        raise Rejected(Rejection.mismatch(f"inputs[{inp.path}].derived_from",
                                          f"a {self.name} {inp.role} file pycert can regenerate",
                                          f"{inp.role} derived from {inp.derived_from}"))


def local_copy(path: Path, setting: Setting) -> Path:
    """``path`` when it lies under the certificates' root, else a copy in ``<out_dir>/inputs/`` (a file
    pycert ships, e.g. the committed pooling instance of an installed pycert, is not named by its
    place in site-packages)."""
    if path.resolve().is_relative_to(setting.root):
        return path
    copy = setting.out_dir / "inputs" / path.name
    data = path.read_bytes()
    if not copy.is_file() or copy.read_bytes() != data:
        atomic_write(copy, data)
    return copy


def input_file(role: str, path: Path, root: Path, derived_from: str | None = None) -> InputFile:
    """An input as a certificate names it: by path relative to ``root``, with its sha256."""
    return InputFile(role=role, path=relative_to_root(path, root), sha256=file_sha256(path),
                     derived_from=derived_from)


def input_path(cert: Certificate, role: str, root: Path) -> Path:
    """The one input of ``role``, resolved against the repository root."""
    paths = [i.path for i in cert.inputs if i.role == role]
    if len(paths) != 1:
        raise Rejected(Rejection.mismatch(f"inputs[role={role}]", f"exactly one {role} input", f"{len(paths)}"))
    return root / paths[0]
