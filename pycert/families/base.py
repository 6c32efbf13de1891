"""The family interface, in two halves: a pure :class:`Claim` and a :class:`Producer` with effects.

A **claim** is everything a certificate of the family says about itself, as functions of data: its
typed parameters and certificate model, the inputs a certificate must name (:meth:`Claim.required`),
the Lean theorems it rests on, its sentence, its limits (``does_not_prove``), each figure's evidence,
the figures recomputed from the inputs (:meth:`Claim.figures`) and the bytes of every derived input
(:meth:`Claim.regenerate`). ``pycert prove`` and ``pycert verify`` call the same claim, so they cannot
disagree about a figure or a sentence: prove writes :meth:`Claim.derive`'s output, verify derives it
again and compares.

A **producer** makes certificates: it declares its own command-line options (an option a family
does not take is a usage error), refuses a setting that could only end badly before anything runs,
and prepares each certificate's instance data and Lean files (:meth:`Producer.prepare`: reading
traces, running solvers, emitting). Claims import what their figures need lazily, so that reading
one certificate does not import every family's engine (BENCHMARKS.md, start-up).
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from pycert.core.errors import Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root, file_sha256
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_TRACE_BYTES
from pycert.core.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo
from pycert.lean.diagnostics import DID_NOT_RUN, CheckResult
from pycert.lean.emit import INSTANCE_NAMESPACE

Progress = Callable[[str], None]
SHOWN = 5
"""How many rejections of one kind a check lists before it counts the rest (linear output, whatever the input)."""


Wanted = tuple[str, str, bool, str | None]
"""An input as :meth:`Claim.required` compares it: role, path, external, what it is derived from."""


class Options(BaseModel):
    """A family's command-line options as a typed value (``pycert prove <family> ...``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Setting:
    """What a producer may use: the certificate directory (input paths are relative to it), the staging
    directory its emitted files go to (the run moves them into ``out_dir`` only when their certificate
    holds), its family's options, progress."""

    out_dir: Path
    stage: Path | None = None
    options: Options = field(default_factory=Options)
    progress: Progress = lambda _m: None
    backend: str | None = None
    timeout: float = 1800.0
    """The run's Lean backend and seconds per Lean process, for a producer that checks Lean files while it
    prepares them (the shards of a big trace)."""

    @property
    def root(self) -> Path:
        """What input paths are relative to: :func:`~pycert.core.files.certificate_root` of ``out_dir``."""
        return certificate_root(self.out_dir)

    def emit(self, rel: Path, data: bytes) -> Path:
        """Write an emitted file at ``rel`` (relative to the certificate directory) into the stage."""
        path = (self.stage or self.out_dir) / rel
        atomic_write(path, data)
        return path

    def emitted(self, role: str, rel: Path, derived_from: str | None = None, sha256: str | None = None) -> InputFile:
        """An emitted file as a certificate names it: by ``rel``, with the sha256 of what was written."""
        path = (self.stage or self.out_dir) / rel
        return InputFile(role=role, path=rel.as_posix(), sha256=sha256 or file_sha256(path), derived_from=derived_from)


@dataclass(frozen=True)
class Derived:
    """What a certificate says about itself, derived from its family, parameters, figures and inputs:
    ``pycert prove`` writes exactly this and ``pycert verify`` recomputes it, so no text is trusted."""

    claim: str
    theorems: tuple[str, ...]
    does_not_prove: tuple[str, ...]
    known_by: Mapping[str, str]
    evidence: Mapping[str, EvidenceState]


class Reader(Protocol):
    """Where a claim reads a certificate's inputs: verify's locator, confined to the certificate's
    directory (:class:`pycert.certify.inputs.Locator`), or a producer's own files; either way a
    :class:`~pycert.core.gate.Source`, read only through the gate."""

    def locate(self, inp: InputFile) -> Source: ...


@dataclass(frozen=True)
class Instance:
    """The Lean instance file a certificate rests on, as its family derives it from the parameters and
    the primary inputs: pycert writes it from data at prove, writes it again at verify, and compiles
    only what it wrote. Its module name and headline theorem come from here, never from a certificate."""

    path: str
    """Relative to the certificate directory (``lean/<Module>.lean``, or ``lean/derived/…``)."""
    derived_from: str
    """The role of the input it is made from, or ``parameters``."""
    section: str | None = None
    """The namespace inside the module that holds this certificate's headline, when one file states the
    headlines of several certificates (a curve's capacities: ``C128``; a dataset's rows: ``Mooncake012``),
    built once for all of them; None: the module's own."""

    @property
    def module(self) -> str:
        return PurePosixPath(self.path).stem

    @property
    def namespace(self) -> str:
        return f"{INSTANCE_NAMESPACE}.{self.module}"

    @property
    def headline(self) -> str:
        """The one theorem whose statement carries every figure the kernel checked, as literals."""
        return f"{self.namespace}.{self.section}.headline" if self.section else f"{self.namespace}.headline"

    def input(self, sha256: str) -> InputFile:
        return InputFile(role="lean", path=self.path, sha256=sha256, derived_from=self.derived_from)


class Claim(ABC):
    """One family's claims, as pure functions of parameters, figures and inputs."""

    name: ClassVar[str]
    params: ClassVar[type[Params]]
    certificate: ClassVar[type[Certificate]]
    lean_module: ClassVar[str]
    """The library module (``lean/Pycert/<Name>.lean``) the family's theorems live in."""
    theorem_names: ClassVar[tuple[str, ...]]
    """Fully qualified library theorems every certificate of the family rests on."""
    primary: ClassVar[tuple[str, ...]] = ()
    """The roles of the inputs a certificate names that are not derived (a trace, an instance file),
    one input each."""
    input_limits: ClassVar[Mapping[str, int]] = {}
    """Role -> the most bytes an input of that role may have (default: a trace's,
    :data:`~pycert.core.limits.MAX_TRACE_BYTES`): checked before the input is hashed or read."""
    headline_predicate: ClassVar[str | None] = None
    """The library definition an instance's headline states (``Pycert.Ceiling.Bounded``); None for a
    family with no Lean instance (an observation: every figure from its inputs)."""
    headline_figures: ClassVar[tuple[str, ...]] = ()
    """The literals of ``headline_predicate``'s application, in order, by figure name."""
    limits: ClassVar[tuple[str, ...]]
    evidence_of: ClassVar[Mapping[str, tuple[EvidenceState, str]]] = {}
    """Figure name -> how that figure is known (its state, and the text naming the theorem, solver or
    library; ``{headline}`` stands for the instance's headline theorem), written beside it in the
    certificate; a figure not listed is ``computed``."""

    @abstractmethod
    def sentence(self, params: Params, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        """The one-sentence claim."""

    def instance(self, params: Params, primary: Sequence[InputFile]) -> Instance | None:
        """Where the certificate's Lean instance goes and what it is made from; None: it has none."""
        return None

    def regenerate(self, params: Params, inputs: Sequence[InputFile], read: Reader) -> bytes:
        """The instance file's bytes: the one function prove writes it with and verify writes it again."""
        raise Rejected(Rejection.mismatch("inputs", f"no Lean instance (the {self.name} family has none)", "one"))

    def input_limit(self, role: str) -> int:
        return self.input_limits.get(role, MAX_TRACE_BYTES)

    def parts(self, params: Params, instance: Instance) -> list[str] | None:
        """The paths of the modules the instance imports, when the parameters alone fix them (a trace in
        pieces: their number is a parameter); None when only the trace does (:meth:`imported` decides)."""
        return None

    def imported(self, params: Params, instance: Instance, inp: InputFile) -> bool:
        """Whether the derived input ``inp`` may be a module the instance imports (a shard of a big trace).
        This only tells :meth:`required` what to expect: every such file is regenerated byte for byte
        (:meth:`derived_files`), so a certificate cannot add, drop or swap one."""
        return False

    def derived_files(self, params: Params, inputs: Sequence[InputFile], read: Reader) -> dict[str, bytes]:
        """Every Lean file derived from the primary inputs, by path: the instance and the modules it
        imports. Verify writes them all again and compares each with the certificate's sha256."""
        inst = self.instance(params, self.primary_inputs(inputs))
        return {} if inst is None else {inst.path: self.regenerate(params, inputs, read)}

    @abstractmethod
    def figures(self, params: Params, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """Every figure of a certificate: those of ``kernel`` (the headline's literals, by name) and the
        rest from its parameters and inputs. Raises :class:`Rejected` when they cannot be what it claims."""

    def primary_inputs(self, inputs: Sequence[InputFile]) -> list[InputFile]:
        return [i for i in inputs if i.role in self.primary and i.derived_from is None]

    def primary_count_errors(self, inputs: Sequence[InputFile]) -> list[Rejection]:
        """A primary role named other than exactly once: nothing about the instance can be derived then."""
        primary = self.primary_inputs(inputs)
        return [Rejection.mismatch(f"inputs[role={role}]", f"exactly one {role} input", str(n))
                for role in self.primary if (n := sum(i.role == role for i in primary)) != 1]

    def required(self, params: Params, inputs: Sequence[InputFile]) -> list[Rejection]:
        """Every way ``inputs`` differ from what a certificate with these parameters must name: exactly
        one input of each primary role, then the instance derived from them, then the modules it imports
        (:meth:`parts`), nothing else. Linear in the inputs, and so is what it says: at most
        :data:`SHOWN` rejections of each kind, then one that counts the rest."""
        if out := self.primary_count_errors(inputs):
            return out
        return compare_inputs(self.expected_inputs(params, inputs), inputs)

    def expected_inputs(self, params: Params, inputs: Sequence[InputFile]) -> list[Wanted]:
        """The inputs a certificate with these parameters and primary inputs must name, in order: the primary
        inputs, the instance, the modules it imports."""
        primary = self.primary_inputs(inputs)
        want = [(i.role, i.path, i.external, i.derived_from) for i in primary]
        if (inst := self.instance(params, primary)) is not None:
            want.append(("lean", inst.path, False, inst.derived_from))
            if (paths := self.parts(params, inst)) is not None:
                want += [("lean", path, False, "trace") for path in paths]
            else:
                want += [(i.role, i.path, i.external, i.derived_from) for i in inputs
                         if i.path != inst.path and self.imported(params, inst, i)]
        return want
    def headline(self, params: Params, inputs: Sequence[InputFile]) -> str | None:
        inst = self.instance(params, self.primary_inputs(inputs))
        return inst.headline if inst is not None else None

    def literal_names(self, params: Params) -> tuple[str, ...]:
        """The figures the headline of a certificate with these parameters states, in order."""
        return self.headline_figures

    def kernel_figures(self, literals: Sequence[int], headline: str, params: Params) -> dict[str, int]:
        """The headline's literals by figure name; a statement with another number of them is rejected."""
        names = self.literal_names(params)
        if len(literals) != len(names):
            raise Rejected(Rejection.mismatch(f"{headline} (its literals)", ", ".join(names),
                                              ", ".join(map(str, literals)) or "none"))
        return dict(zip(names, literals, strict=True))

    def disagreements(self, figures: Mapping[str, Fraction], engine: Mapping[str, Fraction]) -> list[Rejection]:
        """Where pycert's own engines disagree with the figures the kernel proved: a defect in an engine,
        caught by the kernel (prove stops and names both numbers)."""
        def whose(name: str) -> str:
            return "the Lean kernel" if name in self.headline_figures else "the claim's recomputation"

        return [Rejection.mismatch(f"figures.{name}", f"{figures[name]} ({whose(name)})", f"{value} (pycert's engine)",
                                   reason="engine-disagrees")
                for name, value in engine.items() if name in figures and figures[name] != value]

    def library_theorems(self, params: Params) -> tuple[str, ...]:
        """The library theorems a certificate with these parameters rests on."""
        return self.theorem_names

    def theorems(self, params: Params, inputs: Sequence[InputFile]) -> tuple[str, ...]:
        """The theorems a certificate rests on: the family's library theorems, then its instance's headline."""
        headline = self.headline(params, inputs)
        return (*self.library_theorems(params), *((headline,) if headline else ()))

    def does_not_prove(self, params: Params, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        return self.limits

    def predicate(self, params: Params) -> str | None:
        """The library definition the headline of a certificate with these parameters states."""
        return self.headline_predicate

    def predicates(self) -> tuple[str, ...]:
        """Every definition a headline of this family may state (the report page's verifier checks them)."""
        return (self.headline_predicate,) if self.headline_predicate else ()

    def evidence(self, name: str, solver: SolverInfo | None, params: Params | None = None) -> tuple[EvidenceState, str]:
        """How figure ``name`` is known, given the solver record the certificate carries and its parameters."""
        return self.evidence_of.get(name, ("computed", ""))

    def derive(self, params: Params, figures: Mapping[str, Fraction], inputs: Sequence[InputFile],
               solver: SolverInfo | None = None) -> Derived:
        headline = self.headline(params, inputs) or "(no instance)"
        known = {name: self.evidence(name, solver, params) for name in figures}
        return Derived(claim=self.sentence(params, figures, inputs), theorems=self.theorems(params, inputs),
                       does_not_prove=self.does_not_prove(params, figures, inputs),
                       known_by={n: k[1].replace("{headline}", headline) for n, k in known.items()},
                       evidence={n: k[0] for n, k in known.items()})


def compare_inputs(want: Sequence[Wanted], inputs: Sequence[InputFile]) -> list[Rejection]:
    """Every way ``inputs`` differ from ``want`` (:meth:`Claim.expected_inputs`): absent, extra, out of order.
    Linear in the inputs, and so is what it says: at most :data:`SHOWN` rejections of each kind, then one that
    counts the rest."""
    out: list[Rejection] = []
    have = [(i.role, i.path, i.external, i.derived_from) for i in inputs]
    wanted, had = set(want), set(have)
    named = ", ".join(w[1] for w in want[:SHOWN]) + (f" and {len(want) - SHOWN:,} more" if len(want) > SHOWN else "")
    absent = [w for w in want if w not in had]
    extra = [h for h in have if h not in wanted]
    for w in absent[:SHOWN]:
        out.append(Rejection.mismatch("inputs", f"{w[0]} {w[1]}" + (f" derived from the {w[3]}" if w[3] else ""),
                                      "absent", reason="missing-input"))
    for h in extra[:SHOWN]:
        out.append(Rejection.mismatch(f"inputs[{h[1]}]", f"no such input (the family names: {named})",
                                      f"{h[0]} {h[1]}" + (f" derived from {h[3]}" if h[3] else ""), reason="extra-input"))
    for kind, rest, reason in (("absent", absent, "missing-input"), ("extra", extra, "extra-input")):
        if len(rest) > SHOWN:
            out.append(Rejection(subject="inputs", reason=reason,
                                 detail=f"and {len(rest) - SHOWN:,} more {kind} inputs ({len(rest):,} in all)"))
    if not out and have != want:
        k = next((k for k, (h, w) in enumerate(zip(have, want)) if h != w), len(want))  # or one named twice
        expected = f"{want[k][1]} (the family's order)" if k < len(want) else f"{len(want)} inputs, each once"
        out.append(Rejection.mismatch(f"inputs[{k}]", expected, have[k][1]))
    return out


@dataclass
class Prepared:
    """A certificate before the kernel and the audit have answered. Its figures are filled in once
    they have, from the literals of the instance's headline (:meth:`Claim.figures`)."""

    claim: Claim
    id: str
    parameters: Params
    headline: str
    """A short figure for the run's table (not part of the certificate)."""
    inputs: list[InputFile] = field(default_factory=list)
    lean_file: Path | None = None
    """The emitted instance file the kernel must accept (checked in one build with every family's)."""
    parts: list[Path] = field(default_factory=list)
    """The emitted modules the instance imports (a big trace's shards and schedule), in the same build."""
    engine: dict[str, Fraction] = field(default_factory=dict)
    """What pycert's own engines computed for the figures (the kernel's included): compared with what
    the kernel proved, never written."""
    figures: dict[str, Fraction] = field(default_factory=dict)
    located: dict[str, Path] = field(default_factory=dict)
    """Where each input lies during the run (the stage, the certificate directory, a user's trace)."""
    solver: SolverInfo | None = None
    rejection: Rejection | None = None
    """Why the claim does not hold, once some check said so."""
    unchecked: str | None = None
    """Why a check the claim needs did not run to its end (out of memory, killed, timed out): the claim
    is neither written nor rejected."""

    @property
    def instance(self) -> Instance | None:
        return self.claim.instance(self.parameters, self.claim.primary_inputs(self.inputs))

    def derived(self) -> Derived:
        return self.claim.derive(self.parameters, self.figures, self.inputs, self.solver)

    def locate(self, inp: InputFile) -> Source:
        """This run's own files (and the traces the user named), as a :class:`Reader`."""
        return named(self.located[inp.path])

    def judge_parts(self, results: Sequence[CheckResult]) -> bool:
        """Record the kernel's verdicts on the modules checked before the instance (a big trace's parts,
        checked as Ray tasks): a refusal rejects the claim, a failure of resources leaves it unchecked
        (neither written nor rejected), and so does a task that crashed. True when every part passed."""
        bad = [r for r in results if not r.ok]
        if refused := [r for r in bad if r.status not in DID_NOT_RUN]:
            r = refused[0]
            self.rejection = Rejection(subject=f"{r.module}.lean", reason="kernel", detail=f"kernel: {r.module} "
                                       f"{r.status}: {(r.failures[0].render() if r.failures else r.detail)[:300]}")
        elif bad:
            self.unchecked = f"{self.id} was not checked: " + "; ".join(r.detail for r in bad)
        return not bad


class Producer(ABC):
    """Makes the certificates of one family: options, a check of the setting, instance data."""

    claim: ClassVar[Claim]
    options: ClassVar[type[Options]] = Options
    rides_with: ClassVar[str | None] = None
    """A family whose ``pycert prove`` subcommand takes this family's options too and runs it alongside
    (``pycert prove ceiling --trace T --capacity-blocks 128``); this family's own subcommand then takes
    that family's options (``--trace``) as well."""
    borrows: ClassVar[tuple[str, ...]] = ()
    """Families whose ``pycert prove`` options this family's own subcommand takes as well, without running
    them (``pycert prove isolation-cost --trace T --capacity-blocks C``: the ceiling's and capacity's flags)."""
    summary: ClassVar[str] = ""
    """What ``pycert prove <family>`` proves, in a sentence or two: its ``--help`` description."""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """The family's own ``pycert prove`` options (none by default)."""

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> Options:
        """The family's options from the parsed command line; ``everything``: the run is ``prove all``."""
        return self.options.model_validate({k: getattr(args, k) for k in self.options.model_fields if hasattr(args, k)})

    def check(self, setting: Setting) -> None:
        """Refuse, with an :class:`InputError` naming the culprits, a run that could only end badly (two
        inputs that would make one certificate), before anything is built or written."""

    @abstractmethod
    def prepare(self, setting: Setting) -> list[Prepared]:
        """The instance data and Lean instance files of the certificates ``pycert prove`` makes."""


def input_file(role: str, path: Path, root: Path, derived_from: str | None = None, sha256: str | None = None) -> InputFile:
    """An input as a certificate names it: by path relative to ``root`` (the certificate directory) with
    its sha256, or, for a file outside it (a user's trace), by its file name alone (``external``) and its
    absolute path here (``origin``): the directory can be renamed, moved or sent, and verify on this machine
    still finds the trace where it was proved from (elsewhere, beside the directory or with ``--input``)."""
    real, root = path.resolve(), root.resolve()
    inside = real.is_relative_to(root)
    # an origin ends in the input's name: a trace reached by a link of another name records none
    return InputFile(role=role, path=real.relative_to(root).as_posix() if inside else path.name,
                     sha256=sha256 or file_sha256(path), external=not inside, derived_from=derived_from,
                     origin=None if inside or real.name != path.name else real.as_posix())


def part_of(instance: Instance, inp: InputFile, kinds: tuple[str, ...]) -> bool:
    """Whether ``inp`` is a module derived from the trace beside ``instance`` and named after it,
    ``<Module><kind><k>.lean`` (a big trace's shard or piece): what :meth:`Claim.imported` expects."""
    path = PurePosixPath(inp.path)
    tail = path.stem.removeprefix(instance.module)
    return (inp.role == "lean" and inp.derived_from == "trace" and not inp.external and tail != path.stem
            and path.parent == PurePosixPath(instance.path).parent and path.suffix == ".lean"
            and any(tail.startswith(k) and tail[len(k):].isdigit() for k in kinds))


def input_path(inputs: Sequence[InputFile], role: str, read: Reader) -> Source:
    """The one input of ``role``, located."""
    found = [i for i in inputs if i.role == role]
    if len(found) != 1:
        raise Rejected(Rejection.mismatch(f"inputs[role={role}]", f"exactly one {role} input", f"{len(found)}"))
    return read.locate(found[0])

