"""``pycert leak audit``: run the plan of :mod:`pycert.leak.audit_plan` against a live endpoint, as a
stranger would: only HTTP, each tenant with its own key, nothing reset, nothing inside the server read.

Each request is a streamed ``POST /v1/completions`` of token ids asking for the usage chunk; its time to
first token runs from just before the request is sent to the arrival of the first chunk that carries
text, on this machine's clock (:func:`pycert.leak.wire.read_stream`). A request that fails (the server
down, an HTTP error, a stream that ends without text) stops the audit: what was measured up to then is
not enough to say anything, so the audit is *not checked* (:class:`NotChecked`, exit 4), never "no leak".
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from pycert.core.errors import InputError, NotChecked
from pycert.leak.audit_plan import GENERATED, AuditHeader, AuditLine, AuditLog, line_of, plan
from pycert.leak.gateway import Keys
from pycert.leak.wire import body, cached_count, events, read_stream, request_body

TIMEOUT_S = 120.0


class Endpoint:
    """An OpenAI-compatible endpoint, each request under one tenant's key."""

    def __init__(self, url: str, keys: Keys) -> None:
        self.url, self.keys = url.rstrip("/"), keys

    def _request(self, path: str, tenant: str, body: dict | None = None) -> urllib.request.Request:
        return urllib.request.Request(self.url + path, data=None if body is None else json.dumps(body).encode(),
                                      headers={"Content-Type": "application/json",
                                               "Authorization": f"Bearer {self.keys.key_of(tenant)}"})

    def _open(self, req: urllib.request.Request) -> urllib.request.addinfourl:
        try:
            return urllib.request.urlopen(req, timeout=TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            raise NotChecked(f"HTTP {exc.code} {exc.reason}: {exc.read(200).decode('utf-8', 'replace')}",
                             where=req.full_url) from None
        except (urllib.error.URLError, OSError) as exc:
            raise NotChecked(f"cannot reach the server: {getattr(exc, 'reason', exc)}", where=req.full_url) from None

    def model(self, tenant: str) -> str:
        """The first model ``/v1/models`` lists."""
        with self._open(self._request("/v1/models", tenant)) as resp:
            try:
                return str(json.loads(body(resp, self.url + "/v1/models"))["data"][0]["id"])
            except (ValueError, KeyError, IndexError, TypeError):
                raise NotChecked("/v1/models lists no model: name it with --model", where=self.url) from None

    def server(self, tenant: str) -> str:
        """What ``/version`` says, or that it said nothing (a gateway does not forward it)."""
        try:
            with urllib.request.urlopen(self._request("/version", tenant), timeout=TIMEOUT_S) as resp:
                return f"server {json.loads(body(resp, self.url)).get('version', 'unknown')}"[:300]
        except (urllib.error.URLError, OSError, ValueError, AttributeError, InputError):
            return "server version not reported"

    def complete(self, model: str, tenant: str, tokens: tuple[int, ...]) -> tuple[float, int | None, int | None]:
        """(time to first token, cached tokens, prompt tokens) of one streamed request."""
        req = self._request("/v1/completions", tenant, request_body(model, tokens, GENERATED))
        t0 = time.perf_counter()
        with self._open(req) as resp:
            try:
                first, use = read_stream(events(resp))
            except InputError as err:
                raise NotChecked(err.message, where=req.full_url) from None
        if first is None:
            raise NotChecked("the stream ended without a token", where=req.full_url)
        reported = (use or {}).get("prompt_tokens")
        return first - t0, cached_count(use), reported if isinstance(reported, int) and reported >= 0 else None


def run(endpoint: Endpoint, header: AuditHeader, progress: Callable[[str], None] = lambda _m: None) -> AuditLog:
    steps = plan(header)
    lines: list[AuditLine] = []
    units = steps[-1].unit + 1
    for i, step in enumerate(steps):
        try:
            ttft, cached, reported = endpoint.complete(header.model, step.tenant, step.tokens)
        except NotChecked as err:
            raise NotChecked(f"request {i + 1} of {len(steps)} ({step.arm}, {step.role}) failed, so nothing is "
                             f"concluded: {err.message}", where=err.where) from None
        lines.append(line_of(step, ttft, cached, reported))
        if step.role == "probe" and ((step.unit + 1) % 25 == 0 or step.unit + 1 == units):
            progress(f"unit {step.unit + 1}/{units}: last probe {step.arm}, {ttft * 1000:.1f} ms, cached {cached}")
    return AuditLog(header=header, requests=tuple(lines))
