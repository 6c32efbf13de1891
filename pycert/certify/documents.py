"""Certificate documents: the union of every family's certificate, keyed on ``family``; reading one
with a one-line verdict, and the JSON Schema of ``pycert-cert/1``.

Run ``python -m pycert.certify.documents`` to re-export the schema into ``certificates/schema/``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter, ValidationError

from pycert.core import strict_json
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import atomic_write
from pycert.core.gate import beside, named
from pycert.core.limits import MAX_JSON_BYTES, json_depth_error
from pycert.core.resources import schema_path
from pycert.core.schema import SCHEMA_ID, Certificate
from pycert.families import FAMILIES

SCHEMA_PATH = schema_path()

AnyCertificate = Annotated[Union[tuple(f.certificate for f in FAMILIES.values())],  # noqa: UP007
                           Field(discriminator="family")]
_ADAPTER: TypeAdapter[Certificate] = TypeAdapter(AnyCertificate)


def certificate(**fields: Any) -> Certificate:
    """A certificate of the family ``fields["family"]`` names, validated like one read from a file."""
    return _ADAPTER.validate_python(fields)


def _loc(loc: tuple[int | str, ...]) -> str:
    if loc and loc[0] in FAMILIES:  # the union's own step: the tag, not a field
        loc = loc[1:]
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(certificate)"


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _preview(value: Any) -> str:
    """The start of ``value``'s JSON, from its first entries only: encoding a whole 64 MiB document to show
    120 characters of it took 6 s."""
    if isinstance(value, list):
        value = value[:8]
    elif isinstance(value, dict):
        value = dict(itertools.islice(value.items(), 8))
    return json.dumps(value)[:120]


def _rejection(e: dict[str, Any]) -> Rejection:
    """The first schema error as a rejection naming the field."""
    if e["type"] == "union_tag_not_found":
        return Rejection.mismatch("family", "one of " + ", ".join(FAMILIES), "absent")
    if e["type"] == "union_tag_invalid":
        return Rejection.mismatch("family", "one of " + ", ".join(FAMILIES), json.dumps(e["ctx"]["tag"])[:120])
    found = "absent" if e["type"] == "missing" else _preview(e.get("input"))
    return Rejection.mismatch(_loc(tuple(e["loc"])), e["msg"].removeprefix("Value error, "), found)


def parse_certificate(text: str | bytes, where: str | None = None) -> Certificate:
    """Validate against the schema; the first error is a :class:`Rejected` naming the field.

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
        cert = _ADAPTER.validate_json(text)
    except ValidationError as err:
        e = err.errors()[0]
        if e["type"] == "json_invalid":
            raise InputError(f"not a certificate: invalid JSON ({e['msg'].removeprefix('Invalid JSON: ')})",
                             where=where) from None
        if e["type"] in ("dict_type", "model_type") and not e["loc"]:
            raise InputError(f"not a certificate: a JSON {_json_kind(e.get('input'))}, not an object",
                             where=where) from None
        raise Rejected(_rejection(e)) from None
    # asked of a document the schema accepts (a bounded one): pydantic kept the last of two equal keys, and
    # another reader of the same bytes, the first
    if (twice := strict_json.duplicate(text)) is not None:
        key, line = twice
        raise Rejected(Rejection(subject=f"(json) line {line}", reason="duplicate-key",
                                 detail=f"the key {json.dumps(key)[:80]} is named twice in one object: "
                                        "readers of this certificate would disagree on its value"))
    return cert


def not_a_certificate(text: str | bytes) -> str | None:
    """Why ``text`` is no certificate at all, or None: what :func:`parse_certificate` refuses as an
    :class:`InputError`, and a JSON object that does not say ``"schema": "pycert-cert/1"`` (a
    certificate that breaks the schema otherwise is a certificate, tampered with)."""
    try:
        parse_certificate(text)
        return None
    except InputError as err:
        return err.message
    except Rejected:
        pass
    doc = json.loads(text)
    if doc.get("schema") == SCHEMA_ID:
        return None
    keys = ", ".join(json.dumps(k) for k in sorted(doc)[:5]) + (", ..." if len(doc) > 5 else "")
    return (f'not a certificate: a JSON object without "schema": "{SCHEMA_ID}" '
            + (f"(its schema: {json.dumps(doc['schema'])[:40]})" if "schema" in doc else f"(its keys: {keys or 'none'})"))


def load_certificate(path: Path) -> Certificate:
    """Read (as a file of its directory, through the gate: :func:`pycert.core.gate.beside`) and validate one
    certificate: a missing or malformed file is an ``InputError``, a bad one ``Rejected``."""
    return parse_certificate(beside(named(path)).read("a certificate file", MAX_JSON_BYTES), where=str(path))


def export_schema() -> dict[str, Any]:
    """The JSON Schema of ``pycert-cert/1``, generated from the models (the committed file must equal it)."""
    schema = _ADAPTER.json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "pycert certificate", **schema}


def schema_text() -> str:
    return json.dumps(export_schema(), indent=2, sort_keys=True) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    atomic_write(path, schema_text().encode())
    return path


if __name__ == "__main__":
    print(write_schema())
