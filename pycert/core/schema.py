"""The ``pycert-cert/1`` models: what every certificate holds, whatever its family.

A certificate is one published figure set with everything a stranger needs to re-check it offline:
the claim, the Lean theorems it rests on, every input with its sha256, the figures as exact rationals,
the backend and solver that produced it, the audit verdict, provenance and its honest limits. Each
family narrows :class:`Certificate` to its own ``family`` tag and typed ``parameters``
(:class:`pycert.families.base.Family`); :mod:`pycert.certify.documents` reads and writes the union.
"""

from __future__ import annotations

import json
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    model_serializer,
    model_validator,
)

from pycert.core.errors import InputError
from pycert.core.exact import Exact
from pycert.core.gate import beside, named
from pycert.core.limits import MAX_FIGURES, MAX_INPUTS, MAX_JSON_BYTES, MAX_THEOREMS, json_depth_error

SCHEMA_ID = "pycert-cert/1"
DECIMAL_DIGITS = 20
MAX_FIGURE_BITS = 13_000
"""pydantic's JSON parser refuses integers past ~4,300 digits; stay below so every written figure reads back."""

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
EvidenceState = Literal["kernel-checked", "solver-certified", "computed-cross-checked", "computed", "observed"]
"""How a figure is known, strongest first: the Lean kernel checked it (``known_by`` names the theorem);
a solver proved it OPTIMAL with its bound, a second solver and a replay agreeing; it was computed and
checked against another library (``known_by`` names it); it was computed only. Apart from these,
``observed``: measured on a named engine, model, device and seed (the certificate's claim names
them) and re-derived by verify from the recorded measurements, but not proved: another run may
measure otherwise."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def decimal_of(value: Fraction) -> str:
    """The decimal rendering stored beside each exact figure (20 significant digits, deterministic)."""
    with localcontext() as ctx:
        ctx.prec = DECIMAL_DIGITS
        return str(Decimal(value.numerator) / Decimal(value.denominator))


class Figure(_Strict, Exact):
    """One figure: an exact reduced rational, its decimal rendering, and its unit or meaning."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    numerator: int
    denominator: int = Field(gt=0)
    decimal: str
    unit: str = ""
    known_by: str = Field(default="", description="how the figure is known: which check produced or checked it")
    evidence: EvidenceState = Field(default="computed", description="how strongly it is known (verify re-derives it)")

    @classmethod
    def render_decimal(cls, value: Fraction) -> str:
        return decimal_of(value)

    def label(self) -> str:
        return f"figure {self.name}"

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        # before the lowest-terms check, which would reduce a number of any size first
        if isinstance(data, dict):
            for k in ("numerator", "denominator"):  # a JSON integer, not a string, float or bool coerced to one
                if isinstance(data.get(k), str | float | bool):
                    raise ValueError(f"figure {data.get('name')}: {k} must be a JSON integer, got {data[k]!r}")
            sizes = [abs(v).bit_length() for k in ("numerator", "denominator")
                     if isinstance(v := data.get(k), int)]
            if max(sizes, default=0) > MAX_FIGURE_BITS:
                raise ValueError(f"figure {data.get('name')} exceeds {MAX_FIGURE_BITS} bits and cannot be stored exactly")
        return data

    def render(self) -> str:
        exact = str(self.numerator) if self.denominator == 1 else f"{self.numerator}/{self.denominator}"
        return exact if exact == self.decimal else f"{exact} ({self.decimal})"


class InputFile(_Strict):
    """A file the figures derive from: by path relative to the certificate's directory, or, for a file
    that lives outside it (``external``), by its file name alone, with ``origin``, where it was when it was
    proved; verify finds it where ``--input NAME=PATH`` puts it, beside that directory, at its origin or in
    a checkout's shared trace folder, and checks its sha256 like any other."""

    role: Literal["trace", "instance", "lean", "log", "hosts"]
    path: str = Field(min_length=1)
    sha256: Sha256
    external: bool = False
    derived_from: Literal["trace", "instance", "parameters"] | None = Field(
        default=None,
        description="the role of the input this file is generated from (or the certificate's parameters); verify "
                    "regenerates it and compares the sha256, so the file itself need not be kept (e.g. a Lean file "
                    "encoding a shared trace)",
    )

    origin: str | None = Field(
        default=None, max_length=4096, pattern=r"^/[^\x00\n]*$",
        description="an external input's absolute path on the machine that proved it: where verify looks when it "
                    "is not beside the directory, a hint only (a file there counts only when its name and sha256 "
                    "are the input's)")

    @model_serializer(mode="wrap")
    def _without_origin(self, handler: Any) -> Any:
        # certificates of inputs inside their directory (and those made before origins) keep their bytes
        out = handler(self)
        if self.origin is None and isinstance(out, dict):
            out.pop("origin", None)
        return out

    @model_validator(mode="after")
    def _confined(self) -> InputFile:
        # lexical confinement before any file is touched: a genuine prove never writes an escape
        parts = self.path.split("/")
        if self.path.startswith("/") or "\\" in self.path or ".." in parts or "" in parts or "." in parts:
            raise ValueError(f"input path {self.path!r} must be a POSIX path inside the certificate's directory "
                             "(no '..', no absolute path)")
        if self.external and len(parts) != 1:
            raise ValueError(f"external input {self.path!r} must be named by its file name alone")
        if self.origin is not None and (not self.external or PurePosixPath(self.origin).name != self.path
                                        or ".." in PurePosixPath(self.origin).parts):
            raise ValueError(f"origin {self.origin[:80]!r}: only an external input has one, an absolute path without "
                             f"'..' that ends in its file name {self.path!r}")
        return self


class TheoremStatement(_Strict):
    """One named theorem, pinned three ways: as written in the library's source (checked offline against
    the verifier's own sources), as Lean prints it (``#check @Name``), and by a digest of its kernel type
    read from the compiled ``.olean`` (:mod:`pycert.audit.statement`); ``verify --kernel`` rebuilds and
    recomputes the last two."""

    signature: str = Field(min_length=1, description="the source declaration up to ':=', comments stripped, "
                                                     "whitespace normalised")
    statement: str = Field(min_length=1, description="what #check @Name prints")
    type_sha256: Sha256


class BackendInfo(_Strict):
    kind: Literal["native", "wasm"]
    lean_version: str
    lean_commit: str | None = None
    node_version: str | None = None

    @classmethod
    def from_toolchain(cls, info: Any) -> BackendInfo:
        """From ``pycert.lean.backend.ToolchainInfo`` (what ``pycert toolchain`` reports)."""
        return cls(kind=info.backend, lean_version=info.lean_version, lean_commit=info.lean_commit,
                   node_version=info.node_version)


class SolverInfo(_Strict):
    name: str
    version: str
    status: str
    objective: float | None = None
    bound: float | None = None
    parameters: dict[str, JsonValue] = {}


class AuditInfo(_Strict):
    """The axiom audit of the certificate's own theorems: each theorem's axioms (``axioms_by_theorem``)
    and their union (``axioms``); ``skipped`` when compiled oleans were not available."""

    verdict: Literal["pass", "fail", "skipped"]
    axioms: list[str] = []
    axioms_by_theorem: dict[str, list[str]] = {}
    detail: str = ""


class Provenance(_Strict):
    """Facts about the code that made the certificate that are the same on every run of that code.
    When and where a run happened is not here (it would make the same inputs give other bytes): it
    goes to the run record, ``runs/last.json`` beside the certificates."""
    pycert_version: str = Field(min_length=1, description="the pycert release that made the certificate")
    library_sha256: Sha256 = Field(description="content hash of the Lean library it was proved with "
                                               "(pycert.core.resources.library_sha256); verify checks its own")


class Params(_Strict):
    """A family's parameters as a certificate records them; each family declares its own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Certificate(_Strict):
    """What every certificate holds; a family's subclass narrows ``family`` and ``parameters``."""

    schema_id: Literal["pycert-cert/1"] = Field(default=SCHEMA_ID, alias="schema")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="file name stem: <id>.json")
    family: str
    claim: str = Field(min_length=1, pattern=r"^[^\n]+$", description="the claim in one sentence")
    theorems: list[str] = Field(min_length=1, description="fully qualified Lean declarations it rests on")
    statements: dict[str, TheoremStatement] = Field(description="each theorem's statement, pinned")
    parameters: Params
    inputs: list[InputFile] = Field([], max_length=MAX_INPUTS, description="at most a trace, its instance and "
                                   "the shards or pieces it imports: bounded before any check grows with them")
    figures: list[Figure] = Field(min_length=1)
    backend: BackendInfo
    solver: SolverInfo | None = None
    audit: AuditInfo
    provenance: Provenance
    does_not_prove: list[str] = Field(min_length=1, description="honest limits of the claim")

    @model_validator(mode="before")
    @classmethod
    def _counted(cls, data: Any) -> Any:
        # before any entry is validated: 8,000 figures of 13,000 bits took verify 60 s to check one by one
        if isinstance(data, dict):
            audit = data.get("audit") if isinstance(data.get("audit"), dict) else {}
            for key, value, limit in (("figures", data.get("figures"), MAX_FIGURES),
                                      ("does_not_prove", data.get("does_not_prove"), MAX_FIGURES),
                                      ("theorems", data.get("theorems"), MAX_THEOREMS),
                                      ("statements", data.get("statements"), MAX_THEOREMS),
                                      ("audit.axioms_by_theorem", audit.get("axioms_by_theorem"), MAX_THEOREMS)):
                if isinstance(value, list | dict) and len(value) > limit:
                    raise ValueError(f"{key}: {len(value):,} entries, more than the {limit:,} a certificate may hold")
        return data

    @model_validator(mode="after")
    def _unique_names(self) -> Certificate:
        names = [f.name for f in self.figures]
        if len(set(names)) != len(names):
            raise ValueError("figure names must be unique")
        return self

    @property
    def filename(self) -> str:
        return f"{self.id}.json"

    def figure_map(self) -> dict[str, Figure]:
        return {f.name: f for f in self.figures}

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True) + "\n"


def declared(path: Path) -> dict[str, Any] | None:
    """A certificate file's JSON object, read through the gate as a file of its directory
    (:func:`pycert.core.gate.beside`) without validating it (to plan a run, check flags before the real
    checks, or name what it holds in a command); None when it is no JSON object, which those checks then
    report."""
    try:
        data = beside(named(path)).read("a certificate file", MAX_JSON_BYTES)
        doc = None if json_depth_error(data) else json.loads(data)
    except (InputError, ValueError):  # not a regular file, too big, too deep, not JSON: the real checks say so
        return None
    return doc if isinstance(doc, dict) else None


def declared_inputs(path: Path) -> list[dict[str, Any]] | None:
    """The ``inputs`` a certificate file declares (:func:`declared`); None when it has none to read."""
    inputs = (declared(path) or {}).get("inputs")
    if not isinstance(inputs, list):
        return None
    return [i for i in inputs if isinstance(i, dict) and isinstance(i.get("path"), str)]
