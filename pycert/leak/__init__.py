"""The leak and its closure, observed on a real serving engine (``pycert leak``).

A shared prefix cache serves one tenant the blocks another tenant's prompt left; a per-tenant salt
bound at admission closes that. This package drives a real engine through the arms of that
experiment and records, per request, the prompt tokens the engine itself says it served from cache:

- :mod:`~pycert.leak.admission`: the admission layer a user puts in front of an engine (tenant ->
  keyed salt; a request without a tenant is refused);
- :mod:`~pycert.leak.engines`: the engines (transformers continuous batching in process; an
  OpenAI-compatible HTTP endpoint such as vLLM's, with its ``cache_salt``);
- :mod:`~pycert.leak.run`: the five arms, on seeded prompts;
- :mod:`~pycert.leak.log`: the per-request log a certificate names as its input;
- :mod:`~pycert.leak.observation`: every figure and every closure check, as pure functions of the log;
- :mod:`~pycert.leak.stats`: the exact Clopper-Pearson bound;
- :mod:`~pycert.leak.wire`, :mod:`~pycert.leak.httpd`, :mod:`~pycert.leak.serve`,
  :mod:`~pycert.leak.gateway`: the engine over vLLM's OpenAI-compatible fields, and the admission layer
  as an HTTP gateway;
- :mod:`~pycert.leak.audit_plan`, :mod:`~pycert.leak.audit`, :mod:`~pycert.leak.audit_figures`,
  :mod:`~pycert.leak.ks`: the black-box audit of a live endpoint and its exact KS test.

It sits beside :mod:`pycert.data` in the pipeline (it produces observations): it imports
:mod:`pycert.core` only, and :mod:`pycert.families.leak` imports it. torch and transformers (the
``leak`` extra) are imported only by :mod:`pycert.leak.engines.transformers`.
"""
