"""Certificates: the ``pycert-cert/1`` schema, atomic writes and the manifest.

A certificate is one published figure set with everything a stranger needs to re-check it offline:
the claim, the Lean theorems it rests on, every input with its sha256, the figures as exact rationals,
the backend and solver that produced it, the audit verdict, provenance and its honest limits.

``write_certificates`` writes each file to a hidden temporary beside its target and renames it into
place; all temporaries are written and flushed before the first rename, and the renames plus the
manifest's (last) run with SIGINT/SIGTERM held back, so Ctrl-C never leaves a half-written certificate
or a manifest that disagrees with the files. Run ``python -m pycert.certify.schema`` to re-export the JSON
Schema into ``certificates/schema/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from pycert.core.errors import InputError, Rejected
from pycert.core.files import REPO_ROOT
from pycert.core.limits import MAX_JSON_BYTES, json_depth_error

SCHEMA_ID = "pycert-cert/1"
MANIFEST_NAME = "MANIFEST.sha256"
SCHEMA_PATH = REPO_ROOT / "certificates" / "schema" / "pycert-cert-1.schema.json"
DECIMAL_DIGITS = 20
MAX_FIGURE_BITS = 13_000
"""pydantic's JSON parser refuses integers past ~4,300 digits; stay below so every written figure reads back."""

Family = Literal["isolation", "ceiling", "pooling", "first-touch"]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Mismatch(Rejected):
    """A rejection naming the field, the reference value and the value found."""

    def __init__(self, field: str, expected: str, found: str) -> None:
        self.field, self.expected, self.found = field, expected, found
        super().__init__(f"{field}: expected {expected}, found {found}")


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() != timezone.utc.utcoffset(None):
        raise ValueError("must be a UTC time (ending in Z or +00:00)")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def decimal_of(value: Fraction) -> str:
    """The decimal rendering stored beside each exact figure (20 significant digits, deterministic)."""
    with localcontext() as ctx:
        ctx.prec = DECIMAL_DIGITS
        return str(Decimal(value.numerator) / Decimal(value.denominator))


class Figure(_Strict):
    """One figure: an exact reduced rational, its decimal rendering, and its unit or meaning."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    numerator: int
    denominator: int = Field(gt=0)
    decimal: str
    unit: str = ""
    known_by: str = Field(default="", description="how the figure is known: which check produced or checked it")

    @model_validator(mode="after")
    def _reduced_and_bounded(self) -> Figure:
        if max(abs(self.numerator).bit_length(), self.denominator.bit_length()) > MAX_FIGURE_BITS:
            raise ValueError(f"figure {self.name} exceeds {MAX_FIGURE_BITS} bits and cannot be stored exactly")
        if Fraction(self.numerator, self.denominator).denominator != self.denominator:
            raise ValueError(f"figure {self.name} is not in lowest terms")
        return self

    @classmethod
    def from_fraction(cls, name: str, value: Fraction | int, unit: str = "", known_by: str = "") -> Figure:
        value = Fraction(value)
        return cls(name=name, numerator=value.numerator, denominator=value.denominator,
                   decimal=decimal_of(value), unit=unit, known_by=known_by)

    @property
    def value(self) -> Fraction:
        return Fraction(self.numerator, self.denominator)

    def render(self) -> str:
        exact = str(self.numerator) if self.denominator == 1 else f"{self.numerator}/{self.denominator}"
        return exact if exact == self.decimal else f"{exact} ({self.decimal})"


class InputFile(_Strict):
    """A file the figures derive from, by path relative to the repository root (``../shared`` included)."""

    role: Literal["trace", "instance", "lean"]
    path: str = Field(min_length=1)
    sha256: Sha256
    derived_from: Literal["trace"] | None = Field(
        default=None,
        description="the role of the input this file is generated from; verify regenerates it and compares "
                    "the sha256, so the file itself need not be kept (e.g. a Lean file encoding a shared trace)",
    )

    @field_validator("path")
    @classmethod
    def _relative_posix(cls, v: str) -> str:
        if v.startswith("/") or "\\" in v:
            raise ValueError("must be a POSIX path relative to the repository root")
        return v


class BackendInfo(_Strict):
    kind: Literal["native", "wasm"]
    lean_version: str
    lean_commit: str | None = None
    node_version: str | None = None

    @classmethod
    def from_toolchain(cls, info: Any) -> BackendInfo:
        """From ``pycert.lean.wasm.ToolchainInfo`` (what ``pycert toolchain`` reports)."""
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
    """The axiom audit of the named theorems; ``skipped`` when compiled oleans were not available."""

    verdict: Literal["pass", "fail", "skipped"]
    axioms: list[str] = []
    detail: str = ""


class Provenance(_Strict):
    generated_utc: Annotated[datetime, AfterValidator(_utc)]
    git_revision: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    git_dirty: bool
    host_kind: str
    run_id: str = Field(min_length=1)


class Certificate(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"$id": SCHEMA_ID})

    schema_id: Literal["pycert-cert/1"] = Field(default=SCHEMA_ID, alias="schema")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="file name stem: <id>.json")
    family: Family
    claim: str = Field(min_length=1, pattern=r"^[^\n]+$", description="the claim in one sentence")
    theorems: list[str] = Field(min_length=1, description="fully qualified Lean declarations it rests on")
    parameters: dict[str, JsonValue] = {}
    inputs: list[InputFile] = []
    figures: list[Figure] = Field(min_length=1)
    backend: BackendInfo
    solver: SolverInfo | None = None
    audit: AuditInfo
    provenance: Provenance
    does_not_prove: list[str] = Field(min_length=1, description="honest limits of the claim")

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


# ---------------------------------------------------------------------------- schema


def export_schema() -> dict[str, Any]:
    """The JSON Schema of ``pycert-cert/1``, generated from the model (the committed file must equal it)."""
    schema = Certificate.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def schema_text() -> str:
    return json.dumps(export_schema(), indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------- reading


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(certificate)"


def parse_certificate(text: str | bytes, where: str | None = None) -> Certificate:
    """Validate against the schema; the first error becomes a :class:`Mismatch` naming the field.

    A document that is not a certificate at all (not JSON, not UTF-8, not an object, nested past
    :data:`~pycert.core.limits.MAX_JSON_DEPTH`, larger than :data:`~pycert.core.limits.MAX_JSON_BYTES`) is an
    :class:`InputError` at ``where`` (exit 2): there is nothing to reject. A JSON object that breaks
    the schema is a tampered certificate and is rejected (exit 1).
    """
    if len(text) > MAX_JSON_BYTES:
        raise InputError(f"not a certificate: larger than the limit of {MAX_JSON_BYTES >> 20} MiB", where=where)
    if why := json_depth_error(text):
        raise InputError(f"not a certificate: {why}", where=where)
    try:
        return Certificate.model_validate_json(text)
    except ValidationError as err:
        e = err.errors()[0]
        if e["type"] == "json_invalid":
            raise InputError(f"not a certificate: invalid JSON ({e['msg'].removeprefix('Invalid JSON: ')})",
                             where=where) from None
        if e["type"] == "model_type" and not e["loc"]:
            raise InputError(f"not a certificate: a JSON {_json_kind(e.get('input'))}, not an object",
                             where=where) from None
        found = "absent" if e["type"] == "missing" else json.dumps(e.get("input"))[:120]
        raise Mismatch(_loc(e["loc"]), e["msg"], found) from None


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def load_certificate(path: Path) -> Certificate:
    """Read and validate one certificate: a missing or malformed file is an ``InputError``, a bad one a ``Mismatch``."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError("is a directory, not a certificate file", where=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read certificate: {err.strerror}", where=str(path)) from None
    return parse_certificate(data, where=str(path))


# ---------------------------------------------------------------------------- manifest

_MANIFEST_LINE = re.compile(r"^([0-9a-f]{64}) [ *](\S(?:.*\S)?)$")


def parse_manifest(text: str, where: str = MANIFEST_NAME) -> dict[str, str]:
    """``sha256sum`` format: ``<hex>  <name>`` per line. Returns name -> hash."""
    entries: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _MANIFEST_LINE.match(line)
        if not m or m.group(2) in entries:
            raise Mismatch(f"{where}:{n}", "a sha256sum line naming a file once", repr(line[:100]))
        entries[m.group(2)] = m.group(1)
    return entries


def render_manifest(entries: dict[str, str]) -> str:
    return "".join(f"{entries[name]}  {name}\n" for name in sorted(entries))


def read_manifest(path: Path) -> dict[str, str]:
    try:
        return parse_manifest(path.read_text(encoding="utf-8"), where=str(path))
    except FileNotFoundError:
        raise InputError("no manifest beside the certificate", where=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a manifest file", where=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the manifest: {exc.strerror or exc}", where=str(path)) from None
    except UnicodeDecodeError:
        raise Mismatch(str(path), "a UTF-8 sha256sum file", "undecodable bytes") from None


# ---------------------------------------------------------------------------- atomic writes


def _stage(directory: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to a hidden temporary in ``directory`` (same file system: the rename is atomic)."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, so Ctrl-C cannot split a batch of renames."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only: this one is not interrupted
        return
    caught: list[tuple[int, Any]] = []
    old = {s: signal.signal(s, lambda signum, frame: caught.append((signum, frame)))
           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if caught:
            signum, frame = caught[0]
            handler = old[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_certificates(certs: list[Certificate], out_dir: Path) -> None:
    """Write ``<id>.json`` for each certificate and then ``MANIFEST.sha256``, each atomically.

    The manifest keeps the entries of earlier certificates still present (with the hashes recorded
    then, so a hand-edited file stays detectable) and adds the new ones. Nothing else is touched.
    """
    ids = [c.id for c in certs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate certificate ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / MANIFEST_NAME
    entries = read_manifest(manifest_path) if manifest_path.exists() else {}
    entries = {name: h for name, h in entries.items() if (out_dir / name).is_file()}
    staged: list[tuple[Path, Path]] = []
    try:
        for cert in certs:
            data = cert.to_json().encode("utf-8")
            staged.append((_stage(out_dir, cert.filename, data), out_dir / cert.filename))
            entries[cert.filename] = hashlib.sha256(data).hexdigest()
        staged.append((_stage(out_dir, MANIFEST_NAME, render_manifest(entries).encode()), manifest_path))
        with _signals_deferred():
            for tmp, final in staged:
                os.replace(tmp, final)
            _fsync_dir(out_dir)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def atomic_write(path: Path, data: bytes) -> None:
    """Write one file by temporary-then-rename: readers see the old file or the new one, never half.

    The one helper for every file pycert writes (certificates aside, which go in a batch). The
    temporary is hidden beside the target and the whole write runs with SIGINT/SIGTERM held back, so
    no signal can leave it behind; missing parent directories are created. A path that cannot be
    written (a directory, no permission, disk full) is the caller's input error, named by path.
    """
    path = Path(path)
    if not path.name or path.is_dir():
        raise InputError("is a directory: give a file name", where=str(path))
    with _signals_deferred():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = _stage(path.parent, path.name, data)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
        finally:
            tmp.unlink(missing_ok=True)


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    atomic_write(path, schema_text().encode())
    return path


if __name__ == "__main__":
    print(write_schema())
