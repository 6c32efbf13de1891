"""``pycert leak gateway``: the admission layer of :mod:`pycert.leak.admission` as an HTTP front for an
OpenAI-compatible server: a client's key binds its tenant, and every request it forwards carries that
tenant's keyed salt.

- **Keys.** A keys file holds one ``TENANT KEY`` per line (``#`` comments and blank lines allowed);
  clients send ``Authorization: Bearer KEY``. A request without a known key is answered 401 and
  nothing reaches the upstream. Keys are compared in constant time, each against every known key.
- **The salt.** ``HMAC-SHA256(server secret, tenant)`` (:class:`~pycert.leak.admission.Admission`),
  sent as the upstream's ``cache_salt`` field (its hex digits), or, for an upstream without such a field
  (``--salt-in tokens``), prepended to the prompt as token ids (then ``usage`` is given back with the
  salt tokens taken out, so the client sees its own prompt's counts). A ``cache_salt`` the client sent
  is dropped: a tenant does not choose its namespace.
- **Routes.** ``GET /v1/models`` and ``POST /v1/completions`` are forwarded; nothing else is, in
  particular not ``/reset_prefix_cache`` (a tenant must not empty the cache others use).

What it does not do: rate limits, quotas, TLS (it binds 127.0.0.1), or anything about signals other
than shared cache blocks.
"""

from __future__ import annotations

import hmac
import json
import re
import urllib.error
import urllib.request
import urllib.response
from dataclasses import dataclass
from pathlib import Path

from pycert.core.errors import InputError
from pycert.core.gate import named
from pycert.core.limits import MAX_KEYS_BYTES
from pycert.leak.admission import Admission, TenantRequest, salt_tokens
from pycert.leak.httpd import Handler, HttpError, Route
from pycert.leak.wire import DONE, body, cached_count, data_of, error_body, events, parse_request

TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MIN_KEY_CHARS = 16
UPSTREAM_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Keys:
    """Key -> tenant, as a keys file gives them (in file order)."""

    entries: tuple[tuple[str, str], ...]

    def tenant(self, key: str) -> str | None:
        """The tenant of ``key``, comparing it with every known key in constant time."""
        found = None
        for known, tenant in self.entries:
            if hmac.compare_digest(known.encode(), key.encode()):
                found = tenant
        return found

    @property
    def tenants(self) -> list[str]:
        return list(dict.fromkeys(t for _, t in self.entries))

    def key_of(self, tenant: str) -> str:
        return next(k for k, t in self.entries if t == tenant)


def parse_keys(text: str, where: str) -> Keys:
    entries: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        at = f"{where}:{i}"
        if len(fields) != 2:
            raise InputError(f"expected TENANT KEY (two fields), found {len(fields)}", where=at)
        tenant, key = fields
        if not TENANT.match(tenant):
            raise InputError(f"tenant {tenant[:40]!r}: letters, digits, '.', '_' or '-', at most 64", where=at)
        if len(key) < MIN_KEY_CHARS or not key.isascii() or not key.isprintable():
            raise InputError(f"the key of {tenant} must be at least {MIN_KEY_CHARS} printable ASCII characters "
                             "(a guessable key is no binding)", where=at)
        if key in seen:
            raise InputError(f"the key of {tenant} is also on line {seen[key]}: one key, one tenant", where=at)
        seen[key] = i
        entries.append((key, tenant))
    if not entries:
        raise InputError("no TENANT KEY line", where=where)
    return Keys(tuple(entries))


def read_keys(path: Path) -> Keys:
    data = named(path).read("a keys file", MAX_KEYS_BYTES)
    if len(data) > MAX_KEYS_BYTES:
        raise InputError(f"larger than {MAX_KEYS_BYTES >> 20} MiB: not a keys file", where=str(path))
    try:
        return parse_keys(data.decode("utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 (byte {exc.start})", where=str(path)) from None


def bearer(h: Handler) -> str | None:
    value = h.headers.get("Authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Gateway:
    """The routes of :mod:`pycert.leak.gateway` in front of ``upstream``."""

    def __init__(self, upstream: str, keys: Keys, admission: Admission, salt_in: str = "field",
                 salt_field: str = "cache_salt", vocab: int | None = None) -> None:
        if salt_in == "tokens" and not vocab:
            raise InputError("--salt-in tokens needs --vocab (salt token ids must lie in the model's vocabulary)",
                             where="--vocab")
        self.upstream, self.keys, self.admission = upstream.rstrip("/"), keys, admission
        self.salt_in, self.salt_field, self.vocab = salt_in, salt_field, vocab

    def routes(self) -> dict[tuple[str, str], Route]:
        return {("GET", "/v1/models"): self.models, ("POST", "/v1/completions"): self.completions}

    def tenant(self, h: Handler) -> str:
        key = bearer(h)
        tenant = self.keys.tenant(key) if key else None
        if tenant is None:
            raise HttpError(401, "a known key is required: Authorization: Bearer KEY", "AuthenticationError")
        return tenant

    def _open(self, path: str, body: bytes | None) -> urllib.request.addinfourl:
        req = urllib.request.Request(self.upstream + path, data=body, headers={"Content-Type": "application/json"})
        try:
            return urllib.request.urlopen(req, timeout=UPSTREAM_TIMEOUT_S)
        except urllib.error.HTTPError as exc:  # the upstream's own refusal, passed on as it is
            raise HttpError(exc.code, _upstream_message(exc), "UpstreamError") from None
        except (urllib.error.URLError, OSError) as exc:
            raise HttpError(502, f"the upstream {self.upstream} cannot be reached: {getattr(exc, 'reason', exc)}",
                            "BadGateway") from None

    def _answer(self, resp: urllib.response.addinfourl) -> dict:
        """The upstream's JSON answer, read no further than :data:`~pycert.leak.wire.MAX_RESPONSE_BYTES`:
        the gateway holds every tenant's connection, so one upstream answer must not take its memory."""
        try:
            obj = json.loads(body(resp, "upstream"))
        except InputError as err:
            raise HttpError(502, f"the upstream {self.upstream}: {err.message}", "BadGateway") from None
        except ValueError:
            raise HttpError(502, f"the upstream {self.upstream} answered something that is not JSON",
                            "BadGateway") from None
        if not isinstance(obj, dict):
            raise HttpError(502, f"the upstream {self.upstream} answered JSON that is not an object", "BadGateway")
        return obj

    def models(self, h: Handler) -> None:
        self.tenant(h)
        with self._open("/v1/models", None) as resp:
            h.send_json(resp.status, self._answer(resp))

    def salted(self, body: bytes, tenant: str) -> tuple[dict, int]:
        """The body to forward, and how many salt tokens were prepended to its prompt."""
        parse_request(body)  # refuse what the upstream would, before it sees anything
        obj = json.loads(body)
        obj.pop(self.salt_field, None)
        obj.pop("cache_salt", None)
        salt = self.admission.admit(TenantRequest(tenant, obj["prompt"])).salt
        assert salt is not None
        if self.salt_in == "field":
            obj[self.salt_field] = salt.hex()
            return obj, 0
        assert self.vocab is not None
        extra = salt_tokens(salt, self.vocab)
        obj["prompt"] = extra + obj["prompt"]
        return obj, len(extra)

    def completions(self, h: Handler) -> None:
        tenant = self.tenant(h)
        obj, extra = self.salted(h.body(), tenant)
        with self._open("/v1/completions", json.dumps(obj).encode()) as resp:
            if not obj.get("stream"):
                answer = self._answer(resp)
                if isinstance(answer.get("usage"), dict):
                    answer["usage"] = unsalted_usage(answer["usage"], extra)
                h.send_json(resp.status, answer)
                return
            h.start_stream()
            try:
                for raw in events(resp):
                    event = data_of(raw)
                    if event is None:
                        continue
                    if isinstance(event, dict) and isinstance(event.get("usage"), dict):
                        event["usage"] = unsalted_usage(event["usage"], extra)
                    h.send_event(event)
                    if event == DONE:
                        break
            except InputError as err:
                # the status line is sent: an error event, then the end of the stream, as vLLM does
                h.send_event(error_body(f"the upstream {self.upstream}: {err.message}", 502, "BadGateway"))
                h.send_event(DONE)


def unsalted_usage(use: dict, extra: int) -> dict:
    """``usage`` with ``extra`` prepended salt tokens taken out of the prompt's counts."""
    if not extra:
        return use
    out = dict(use)
    for k in ("prompt_tokens", "total_tokens"):
        if isinstance(out.get(k), int):
            out[k] = max(0, out[k] - extra)
    cached = cached_count(use)
    if cached is not None:
        out["prompt_tokens_details"] = {**use["prompt_tokens_details"], "cached_tokens": max(0, cached - extra)}
    return out


def _upstream_message(exc: urllib.error.HTTPError) -> str:
    try:
        err = json.loads(body(exc, "upstream")).get("error")
        return str(err.get("message") if isinstance(err, dict) else err)
    except (ValueError, AttributeError, OSError, InputError):
        return f"the upstream answered HTTP {exc.code} {exc.reason}"
