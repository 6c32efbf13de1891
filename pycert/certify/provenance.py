"""What made a certificate, and where and when a run of ``pycert prove`` happened.

A certificate's provenance names only what is the same on every run of the same code: the pycert
version and the content hash of the Lean library it was proved with (verify checks its own library
against it). The git revision and dirty flag, UTC time, host kind and run id go to the run record
``runs/last.json`` beside the certificates (ignored by git), so the same inputs and code give the
same bytes.

The dirty flag ignores ``certificates/`` itself: writing certificates must not mark the code that
produced them as modified.
"""

from __future__ import annotations

import os
import platform
import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from pycert import __version__
from pycert.core.files import atomic_write
from pycert.core.gate import confined
from pycert.core.resources import checkout_root, library_sha256
from pycert.core.schema import Provenance

RUN_RECORD = Path("runs") / "last.json"
"""Relative to the certificate folder."""


def _git(root: Path, *args: str) -> str | None:
    try:
        run = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout if run.returncode == 0 else None


def git_revision(root: Path) -> str | None:
    """``HEAD``'s commit, or None outside a repository or before the first commit."""
    out = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return out.strip() if out and out.strip() else None


def git_dirty(root: Path) -> bool:
    """True when tracked or untracked files outside ``certificates/`` differ from ``HEAD`` (or git fails)."""
    out = _git(root, "status", "--porcelain", "--untracked-files=normal", "--", ".", ":(exclude)certificates")
    return out is None or bool(out.strip())


def host_kind() -> str:
    """``ci`` or ``local``, then the platform, e.g. ``ci/linux-x86_64``."""
    where = "ci" if os.environ.get("CI") else "local"
    return f"{where}/{platform.system().lower()}-{platform.machine().lower()}"


def new_run_id() -> str:
    """``$PYCERT_RUN_ID`` when set (CI passes its own), else a fresh random id."""
    return os.environ.get("PYCERT_RUN_ID") or uuid.uuid4().hex


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def certificate_provenance() -> Provenance:
    """What a certificate made now records about the code that made it."""
    return Provenance(pycert_version=__version__, library_sha256=library_sha256())


class RunRecord(BaseModel):
    generated_utc: datetime
    git_revision: str | None
    git_dirty: bool
    host_kind: str
    run_id: str
    written: list[str] = []
    stages: list[dict[str, object]] = []


def collect(run_id: str | None = None) -> RunRecord:
    """The record of a run made now. An installed pycert has no checkout: no git revision, and nothing
    for it to be dirty against."""
    root = checkout_root()
    return RunRecord(generated_utc=utc_now(), git_revision=git_revision(root) if root else None,
                     git_dirty=git_dirty(root) if root else False, host_kind=host_kind(),
                     run_id=run_id or new_run_id())


def write_run_record(record: RunRecord, cert_dir: Path) -> Path:
    path = confined(cert_dir, cert_dir / RUN_RECORD)
    atomic_write(path, (record.model_dump_json(indent=2) + "\n").encode())
    return path
