"""Certifying engine replays: the log a ``pycert engine replay`` just recorded (published with its
certificate, so a replay that does not hold leaves nothing in ``--out``), and every
``inputs/engine-*.jsonl`` already under the certificate directory whose trace, named by its file name,
is in its ``inputs/`` or beside it (``pycert prove engine``, and ``all``)."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

from pycert.core.files import certificate_root
from pycert.core.gate import entries, inside, named
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.engine import CLAIM, LOG_GLOB, READING, EngineParams, headline, log_figures, names
from pycert.families.traces import read_certified
from pycert.leak import replay as replaylog


class EngineOptions(Options):
    log: bytes | None = None
    """A replay's log, just recorded (``engine replay``; nothing from the command line)."""
    trace: Path | None = None
    """The trace that log replayed."""


def log_path(stem: str) -> Path:
    """Where a replay's log lies, relative to the certificate directory."""
    return Path("inputs") / f"{stem}.jsonl"


class EngineProducer(Producer):
    summary = ("Certify every engine replay recorded in the certificate directory (pycert engine replay writes "
               "them): a real engine's own prefix-cache hits on a trace, observed, beside LRU and the optimum at its "
               "capacity; the figures are re-derived from the per-request log, not proved.")
    claim = CLAIM
    options = EngineOptions

    def options_from(self, args: object, everything: bool = False) -> EngineOptions:  # type: ignore[override]
        return EngineOptions()

    def prepare(self, setting: Setting) -> list[Prepared]:
        opts: EngineOptions = setting.options  # type: ignore[assignment]
        out, fresh = [], None
        if opts.log is not None and opts.trace is not None:
            log = replaylog.parse(opts.log, "the replay's log")
            fresh = names(log.header.trace, log.header.num_blocks, log.header.block_tokens, log.header.seed, log.header.engine)
            rel = log_path(fresh)
            setting.emit(rel, opts.log)
            out.append(self._prepared(log, setting.emitted("log", rel), (setting.stage or setting.out_dir) / rel,
                                      opts.trace, setting))
        logs = entries(setting.out_dir / "inputs", ".jsonl") if (setting.out_dir / "inputs").is_dir() else []
        for source in (e for e in logs if fnmatch(e.name, LOG_GLOB) and e.path.stem != fresh):
            log = replaylog.read(inside(setting.out_dir, f"inputs/{source.name}"))  # no link, in --out
            path = source.path
            name = log.header.trace
            trace = next((t.path for t in (inside(setting.out_dir, f"inputs/{name}"),  # no link, in --out
                                           named(certificate_root(setting.out_dir).parent / name)) if t.exists()), None)
            if trace is None:  # a trace from elsewhere: prove leaves its certificate as it is
                setting.progress(f"  {path.name}: left as it is, its trace {name} is neither in {setting.out_dir}/inputs "
                                 "nor beside it (pycert engine replay proves it again)")
                continue
            out.append(self._prepared(log, input_file("log", path, setting.root), path, trace, setting))
        return out

    def _prepared(self, log: replaylog.ReplayLog, inp, located: Path, trace: Path, setting: Setting) -> Prepared:  # noqa: ANN001
        figures, rejections = log_figures(log, read_certified(trace, READING))
        trace_input = input_file("trace", trace, setting.root)
        setting.progress(f"  {inp.path}: {headline(figures) if figures else rejections[0].render()}")
        h = log.header
        return Prepared(claim=CLAIM, id=names(h.trace, h.num_blocks, h.block_tokens, h.seed, h.engine), parameters=EngineParams.of(h),
                        engine=figures, headline=headline(figures) if figures else "not a replay of its trace",
                        inputs=[inp, trace_input], located={inp.path: located, trace_input.path: trace},
                        rejection=rejections[0] if rejections else None)


PRODUCER = EngineProducer()
