"""Admission: the layer a user puts in front of a shared-prefix-cache engine, binding each request
to its tenant's cache namespace.

An engine that hashes prompt blocks and shares them across requests serves any tenant the blocks
another tenant's identical prefix left, and the time to first token tells him so. The admission
layer closes that by giving every admitted request its tenant's **salt**: the engine mixes the salt
into its block hashes (vLLM's ``cache_salt`` field), or, for an engine with no such field, the salt
is prepended to the prompt as a few tokens (:mod:`pycert.leak.engines.transformers`). Requests with
the same salt share blocks; requests with different salts never match.

What the salt is: a **namespace separator**, ``HMAC-SHA256(server secret, tenant)``. Keyed, because
a salt anyone can compute from the tenant's name (``sha256(tenant)``, :func:`unkeyed_salt`) lets an
attacker who can get a salt of his choosing to the engine (a client-supplied ``cache_salt`` passed
through, a request that reaches the engine past this layer) step into the victim's namespace;
``pycert leak run`` measures exactly that attack against both schemes.

What it is not: **encryption**. The KV blocks stay in the engine's memory in the clear, the
operator of the engine sees every prompt, and a tenant who learns the server secret can compute
every other tenant's salt. It separates tenants from each other, not from the server. It does not
hide how long a prompt is, nor any timing signal other than shared cache blocks.

A request without a tenant is refused (:class:`AdmissionRefused`): admitting it unsalted would put
it in the shared namespace, which is the leak.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from pycert.core.errors import InputError

MIN_SECRET_BYTES = 16
SALT_TOKENS = 8
"""Token ids a salt becomes where the engine has no salt field (prepended to the prompt)."""
FIRST_ID = 16
"""Prompt and salt token ids start here, clear of the special ids a tokenizer may reserve at the bottom."""


class AdmissionRefused(InputError):
    """A request the admission layer will not pass to the engine (it names why)."""


@dataclass(frozen=True)
class TenantRequest:
    """A request as a client sends it: its tenant (``None`` when it names none) and its prompt."""

    tenant: str | None
    tokens: Sequence[int]


@dataclass(frozen=True)
class EngineRequest:
    """A request as the engine receives it: the prompt and the salt bound at admission (``None``:
    unsalted, in the shared namespace)."""

    tokens: tuple[int, ...]
    salt: bytes | None


def keyed_salt(secret: bytes, tenant: str) -> bytes:
    """``HMAC-SHA256(secret, tenant)``: computable only with the server secret."""
    return hmac.new(secret, tenant.encode("utf-8"), hashlib.sha256).digest()


def unkeyed_salt(tenant: str) -> bytes:
    """``sha256(tenant)``: the weak scheme, computable by anyone who knows the tenant's name (what the
    attacker arm forges)."""
    return hashlib.sha256(tenant.encode("utf-8")).digest()


def salt_tokens(salt: bytes, vocab: int) -> list[int]:
    """:data:`SALT_TOKENS` token ids from a salt's bytes (two bytes each, folded into the vocabulary), for
    an engine without a salt field: a prefix that differs in its first block changes every block hash
    after it."""
    need = 2 * SALT_TOKENS
    stream = (salt * (need // len(salt) + 1))[:need] if salt else bytes(need)
    return [FIRST_ID + int.from_bytes(stream[i:i + 2], "big") % (vocab - FIRST_ID) for i in range(0, need, 2)]


class Admission:
    """Tenant -> keyed salt. ``admit`` refuses a request without a tenant and salts every other one."""

    scheme = "keyed: HMAC-SHA256(server secret, tenant)"

    def __init__(self, secret: bytes) -> None:
        if len(secret) < MIN_SECRET_BYTES:
            raise InputError(f"the server secret is {len(secret)} bytes; the admission layer needs at least "
                             f"{MIN_SECRET_BYTES} (a salt keyed with a guessable secret is an unkeyed salt)")
        self._secret = secret

    def salt(self, tenant: str) -> bytes:
        return keyed_salt(self._secret, tenant)

    def admit(self, request: TenantRequest) -> EngineRequest:
        if not request.tenant:
            raise AdmissionRefused("refused: the request names no tenant, and an unsalted request would share "
                                   "cache blocks with every other tenant", where="admission")
        return EngineRequest(tokens=tuple(request.tokens), salt=self.salt(request.tenant))


class UnkeyedAdmission(Admission):
    """The weak scheme the attacker arm measures: salts anyone can recompute. Not for use."""

    scheme = "unkeyed: sha256(tenant)"

    def __init__(self) -> None:
        self._secret = b""

    def salt(self, tenant: str) -> bytes:
        return unkeyed_salt(tenant)
