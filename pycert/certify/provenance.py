"""Where and when a certificate was made: git revision and dirty flag, UTC time, host kind, run id;
and what made it: the pycert version and the content hash of the Lean library it was proved with.

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

from pycert import __version__
from pycert.certify.schema import Provenance
from pycert.core.resources import checkout_root, library_sha256


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


def collect(run_id: str | None = None) -> Provenance:
    """Provenance for certificates made now; pass one ``run_id`` for every certificate of a run. An
    installed pycert has no checkout: no git revision, and nothing for it to be dirty against."""
    root = checkout_root()
    return Provenance(
        generated_utc=utc_now(), git_revision=git_revision(root) if root else None,
        git_dirty=git_dirty(root) if root else False, host_kind=host_kind(), run_id=run_id or new_run_id(),
        pycert_version=__version__, library_sha256=library_sha256(),
    )
