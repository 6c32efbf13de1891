"""Exit codes, the error types that map onto them, and :class:`Rejection`, a checker's "no".

Every user-facing failure is one of these; the CLI prints ``str(err)`` as a single line and exits
with ``err.exit_code``. Anything else escaping is a bug and is allowed to show a traceback.
"""

from __future__ import annotations

from pydantic import BaseModel

EXIT_OK = 0
"""The claim holds / the check passed."""
EXIT_REJECTED = 1
"""A checker rejected: a false theorem, a tampered certificate, a failed audit."""
EXIT_USAGE = 2
"""Usage or input error: bad flags, a missing or malformed file, no usable toolchain."""
EXIT_RESOURCES = 3
"""A check did not run to its end: a Lean process ran out of memory, was killed or timed out.
Nothing was refused; the message names the cause, the size and the remedy."""
EXIT_NOT_CHECKED = 4
"""A measurement that could not run or has no signal (``pycert leak audit``: the server down, the
tenant's own repeat not told apart from a fresh prompt). It says nothing either way: never "no leak"."""
EXIT_NOT_HERE = 5
"""Certificates that could not be checked here because a trace they name from outside their directory is not
on this machine (not given with ``--input``, not beside the directory, not where it was proved from): nothing
was found wrong with them, and nothing was checked either (a fresh clone without the shared traces)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT), at any point, imports included."""
EXIT_TERMINATED = 143
"""SIGTERM (128 + SIGTERM): temporaries are removed first."""


class PycertError(Exception):
    """Base class: a one-line, user-facing error."""

    exit_code = EXIT_USAGE
    where: str | None = None
    details: dict | None = None
    """Extra fields of the ``--json`` error object (e.g. ``verify``'s per-certificate results)."""

    @property
    def message(self) -> str:
        """The why, without the where (``str(err)`` is both)."""
        return getattr(self, "_message", None) or str(self)


class Located(PycertError):
    """An error about a place (``where``: a file, file:line, a flag), printed before the message."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where, self._message = where, message
        super().__init__(f"{where}: {message}" if where else message)


class InputError(Located):
    """The user's input is missing or malformed (``where`` names file:line when known)."""


class Refused(InputError):
    """A file the gate (:mod:`pycert.core.gate`) would not read, or stopped reading: a link, not a regular
    file, too large, a compression bomb, too many references. Kept apart from a malformed file because a
    checker must not read it as evidence about the certificate (a trace refused unread says nothing about
    the layout its certificate names)."""


class NotHere(InputError):
    """An external input (a trace from outside a certificate's directory) that is on this machine nowhere verify
    looks, with a file of its name and sha256 (exit 5 when nothing else is wrong)."""

    exit_code = EXIT_NOT_HERE


class UsageError(InputError):
    """A bad command line (argparse's own errors); ``where`` is the flag or the command."""


class ToolchainMissing(PycertError):
    """A tool a check needs is missing here: no usable Lean backend, or no chromium for ``pycert
    mutate``'s report-verifier checker. Nothing was rejected (exit 2)."""


class ResourcesExhausted(Located):
    """A check that did not run to its end for want of memory or time (exit 3): not a rejection."""

    exit_code = EXIT_RESOURCES


class NotChecked(Located):
    """A check that could not be made (exit 4): the server it measures is down, or the measurement
    shows no signal to judge by. Nothing was found either way."""

    exit_code = EXIT_NOT_CHECKED


class Rejection(BaseModel):
    """One thing a checker refused, whichever checker it was (verify, the audit, the solvers' checks,
    the replay, Lean's ``#print axioms``).

    ``subject`` is what was refused (a certificate field, a declaration, a solver result, a schedule
    step), ``reason`` a short code a program can test, ``detail`` one line for a person. A check
    that compares with a reference (the manifest, the file on disk, the recomputed value) also says
    what it ``expected`` and what it ``found``.
    """

    subject: str
    reason: str
    detail: str
    expected: str | None = None
    found: str | None = None

    @classmethod
    def mismatch(cls, subject: str, expected: str, found: str, reason: str = "mismatch") -> Rejection:
        return cls(subject=subject, reason=reason, detail=f"expected {expected}, found {found}",
                   expected=expected, found=found)

    def render(self) -> str:
        return f"{self.subject}: {self.detail}" if self.subject else self.detail


class Rejected(PycertError):
    """A checker said no (exit 1), for the reason its :class:`Rejection` gives."""

    exit_code = EXIT_REJECTED

    def __init__(self, rejection: Rejection | str) -> None:
        if isinstance(rejection, str):
            rejection = Rejection(subject="", reason="rejected", detail=rejection)
        self.rejection = rejection
        self.where, self._message = rejection.subject or None, rejection.detail  # what was refused, and why
        super().__init__(rejection.render())


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM so that ``finally`` blocks remove temporaries.

    A ``BaseException`` like ``KeyboardInterrupt``: an ``except Exception`` must not swallow it.
    """
