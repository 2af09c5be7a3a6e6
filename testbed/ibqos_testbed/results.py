"""The results directory of a run: results.json plus the raw stdout/stderr of every process.

Layout:  RESULTS/results.json
         RESULTS/<phase>/<flow id>.<server|client>.{out,err}
results.json embeds the run plan, so `ibqos testbed report RESULTS` needs nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from ibqos.docfile import DOCUMENT, read_json, validate, write_atomic
from pydantic import BaseModel, ConfigDict, Field

from .runplan import RunPlan

SCHEMA: Literal["ibqos.testbed-results/1"] = "ibqos.testbed-results/1"
FILE = "results.json"


class ProcessResult(BaseModel):
    model_config = DOCUMENT
    role: Literal["server", "client"]
    host: str
    argv: list[str]
    stdout: str  # path relative to the results directory
    stderr: str
    started: float | None = None  # wall clock (time.time()), None if never started
    ended: float | None = None
    returncode: int | None = None
    timed_out: bool = False
    error: str | None = None


class FlowResult(BaseModel):
    model_config = DOCUMENT
    phase: str
    id: str
    kind: Literal["bw", "lat"]
    sl: int
    class_name: str
    server: ProcessResult
    client: ProcessResult
    error: str | None = None  # one line; None when both processes succeeded

    @property
    def ok(self) -> bool:
        return self.error is None


class Results(BaseModel):
    model_config = ConfigDict(**DOCUMENT, populate_by_name=True)
    schema_: Literal["ibqos.testbed-results/1"] = Field(SCHEMA, alias="schema")
    runplan: RunPlan
    started: float
    ended: float
    interrupted: bool = False
    flows: list[FlowResult]

    def save(self, directory: Path) -> Path:
        path = directory / FILE
        write_atomic(path, json.dumps(self.model_dump(mode="json", by_alias=True), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> Results:
        directory = Path(directory)
        path = directory / FILE if directory.is_dir() else directory
        doc = read_json(path, hint="is this a results directory of 'ibqos testbed run'?")
        return validate(cls, doc, path)
