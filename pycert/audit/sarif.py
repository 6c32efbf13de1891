"""SARIF 2.1.0 output of the axiom audit, so CI (GitHub code scanning) annotates the declaration.

One rule per finding reason; one result per finding, located at the declaration's source line when
the compiled files record it (``Lean.declRangeExt``), else at the module's file. Lean columns are
0-based, SARIF's 1-based.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pycert import __version__
from pycert.audit.axioms import WHY, AuditReport, Finding

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class Message(_Model):
    text: str


class ArtifactLocation(_Model):
    uri: str
    uri_base_id: str | None = Field(default=None, alias="uriBaseId")


class Region(_Model):
    start_line: int = Field(alias="startLine", ge=1)
    start_column: int | None = Field(default=None, alias="startColumn", ge=1)


class PhysicalLocation(_Model):
    artifact_location: ArtifactLocation = Field(alias="artifactLocation")
    region: Region | None = None


class LogicalLocation(_Model):
    name: str
    fully_qualified_name: str = Field(alias="fullyQualifiedName")
    kind: str = "function"


class Location(_Model):
    physical_location: PhysicalLocation | None = Field(default=None, alias="physicalLocation")
    logical_locations: list[LogicalLocation] = Field(default_factory=list, alias="logicalLocations")


class Result(_Model):
    rule_id: str = Field(alias="ruleId")
    rule_index: int = Field(alias="ruleIndex", ge=0)
    level: str = "error"
    message: Message
    locations: list[Location]
    properties: dict[str, object] = Field(default_factory=dict)


class Rule(_Model):
    id: str
    name: str
    short_description: Message = Field(alias="shortDescription")
    default_configuration: dict[str, str] = Field(default_factory=lambda: {"level": "error"},
                                                  alias="defaultConfiguration")


class Driver(_Model):
    name: str = "pycert-audit"
    version: str = __version__
    rules: list[Rule]


class Tool(_Model):
    driver: Driver


class Invocation(_Model):
    execution_successful: bool = Field(alias="executionSuccessful")
    properties: dict[str, object] = Field(default_factory=dict)


class Run(_Model):
    tool: Tool
    invocations: list[Invocation]
    results: list[Result]


class SarifLog(_Model):
    schema_uri: str = Field(default=SCHEMA, alias="$schema")
    version: str = VERSION
    runs: list[Run]

    def dump(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True, indent=2)


def _uri(path: Path, root: Path | None) -> str:
    """A repository-relative URI when the file lies under ``root`` (what code scanning matches on)."""
    path = path.resolve()
    if root is not None:
        try:
            return path.relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_uri()


def _location(f: Finding, sources: dict[str, Path], root: Path | None) -> Location:
    logical = [LogicalLocation(name=f.subject.rsplit(".", 1)[-1], fullyQualifiedName=f.subject)]
    src = sources.get(f.module)
    if src is None:
        return Location(logicalLocations=logical)
    region = Region(startLine=f.line, startColumn=(f.column or 0) + 1) if f.line else Region(startLine=1)
    return Location(physicalLocation=PhysicalLocation(artifactLocation=ArtifactLocation(uri=_uri(src, root)),
                                                      region=region), logicalLocations=logical)


def to_sarif(report: AuditReport, sources: dict[str, Path], root: Path | None = None) -> SarifLog:
    """The report as a SARIF log; ``sources`` maps a module to its ``.lean`` file, ``root`` is the checkout."""
    reasons = sorted(WHY)
    rules = [Rule(id=f"pycert/{r}", name=r, shortDescription=Message(text=f"a theorem {WHY[r]}")) for r in reasons]
    results = []
    for f in report.findings:
        text = f"{f.subject} {f.detail}: {f.constant}"
        if len(f.chain) > 2:
            text += f" (via {' -> '.join(f.chain)})"
        results.append(Result(
            ruleId=f"pycert/{f.reason}", ruleIndex=reasons.index(f.reason), message=Message(text=text),
            locations=[_location(f, sources, root)],
            properties={"declaration": f.subject, "constant": f.constant, "chain": f.chain, "auxiliary": f.auxiliary},
        ))
    invocation = Invocation(executionSuccessful=True, properties={
        "verdict": report.verdict, "declarationsAudited": report.declarations_audited,
        "axiomsSeen": report.axioms_seen, "seconds": round(report.seconds, 3),
    })
    return SarifLog(runs=[Run(tool=Tool(driver=Driver(rules=rules)), invocations=[invocation], results=results)])
