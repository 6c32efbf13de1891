"""``MANIFEST.sha256``: the sha256 of every certificate beside it, in ``sha256sum`` format.

``write_certificates`` writes the certificates and then the manifest in one batch of renames
(:func:`pycert.core.files.atomic_write_many`), so Ctrl-C never leaves a half-written certificate or
a manifest that disagrees with the files. :func:`manifest_rejection` is the one check of a
certificate's bytes against its entry (``pycert verify`` and the report both use it).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import atomic_write_many
from pycert.core.gate import Source, beside, named
from pycert.core.limits import MAX_MANIFEST_BYTES, MAX_NAME_BYTES
from pycert.core.schema import Certificate

MANIFEST_NAME = "MANIFEST.sha256"
_MANIFEST_LINE = re.compile(r"^([0-9a-f]{64}) [ *](\S(?:.*\S)?)$")
_PLAIN_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\.json")
"""What a manifest may name: a certificate file beside it (the id pattern of ``Certificate``)."""


def parse_manifest(text: str, where: str = MANIFEST_NAME) -> dict[str, str]:
    """``sha256sum`` format: ``<hex>  <name>`` per line. Returns name -> hash."""
    entries: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _MANIFEST_LINE.match(line)
        if not m or m.group(2) in entries:
            raise Rejected(Rejection.mismatch(f"{where}:{n}", "a sha256sum line naming a file once", repr(line[:100])))
        if not _PLAIN_NAME.fullmatch(m.group(2)) or len(m.group(2)) > MAX_NAME_BYTES:  # never a path, nor a name no file has
            raise Rejected(Rejection.mismatch(f"{where}:{n}", "a certificate's plain file name (<id>.json)",
                                              repr(m.group(2)[:100])))
        entries[m.group(2)] = m.group(1)
    return entries


def render_manifest(entries: dict[str, str]) -> str:
    return "".join(f"{entries[name]}  {name}\n" for name in sorted(entries))


def read_manifest(source: Source | Path) -> dict[str, str]:
    """The manifest's entries; a path is read as a file of its directory (:func:`pycert.core.gate.beside`:
    never through a link), a :class:`~pycert.core.gate.Source` as it says (``--manifest``: one the user named)."""
    source = source if isinstance(source, Source) else beside(named(source))
    if not source.exists():
        raise InputError("no manifest beside the certificate", where=str(source))
    data = source.read("a manifest file", MAX_MANIFEST_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected(Rejection.mismatch(str(source), "a UTF-8 sha256sum file", "undecodable bytes")) from None
    return parse_manifest(text, where=str(source))


def lists(manifest: Source | Path, name: str) -> bool:
    """Whether the manifest at ``manifest`` has an entry for ``name`` (False when it is missing or unreadable)."""
    try:
        return name in read_manifest(manifest)
    except (InputError, Rejected):
        return False


def manifest_rejection(entries: dict[str, str], name: str, data: bytes, manifest: Path | str) -> Rejection | None:
    """Why the bytes ``data`` of certificate ``name`` disagree with the manifest, or None."""
    want = entries.get(name)
    got = hashlib.sha256(data).hexdigest()
    if want is None:
        return Rejection.mismatch(f"manifest[{name}]", f"an entry in {manifest}", "none")
    if want != got:
        return Rejection.mismatch(f"manifest[{name}].sha256", want, got)
    return None


def certificate_files(certs: list[Certificate], out_dir: Path) -> dict[Path, bytes]:
    """``<id>.json`` for each certificate and the ``MANIFEST.sha256`` that covers them, as bytes to write
    together (:func:`pycert.core.files.publish_files`).

    The manifest keeps the entries of earlier certificates still present (with the hashes recorded
    then, so a hand-edited file stays detectable) and adds the new ones. Nothing else is touched.
    """
    ids = [c.id for c in certs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate certificate ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    manifest_path = out_dir / MANIFEST_NAME
    entries = read_manifest(manifest_path) if manifest_path.exists() or manifest_path.is_symlink() else {}
    entries = {name: h for name, h in entries.items() if (out_dir / name).is_file()}
    files: dict[Path, bytes] = {}
    for cert in certs:
        data = cert.to_json().encode("utf-8")
        files[out_dir / cert.filename] = data
        entries[cert.filename] = hashlib.sha256(data).hexdigest()
    files[manifest_path] = render_manifest(entries).encode()
    return files


def write_certificates(certs: list[Certificate], out_dir: Path) -> None:
    """Write the certificates and then the manifest, as one batch."""
    atomic_write_many(certificate_files(certs, out_dir))
