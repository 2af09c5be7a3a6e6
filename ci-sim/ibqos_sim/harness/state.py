"""harness.json: what `ibqos fabric up` (and `run-sm --daemon`) left running in a run
directory, read back by `fabric up`, `fabric run-sm` and `fabric down`. A file edited by hand,
cut or written by something else is one line naming its field (exit 2), never an internal
error; the PIDs it names are stopped only while they carry its IBSIM_SOCKNAME
(fabric.AttachedProcess)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from ibqos.docfile import SMALL_DOC_LIMIT, read_json_text, validate
from ibqos.errors import InputError
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from .ibsim_binary import CHOICES

STATE_FILE = "harness.json"
Pid = Annotated[StrictInt, Field(gt=0)]


class IbsimState(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: StrictStr = "debian"
    args: list[StrictStr] = Field(default_factory=list)  # the options it was started with

    @field_validator("kind")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in CHOICES:
            raise ValueError(f"{v!r}: expected one of {', '.join(CHOICES)}")
        return v


class HarnessState(BaseModel):
    model_config = ConfigDict(extra="allow")  # kept as written when an SM is recorded
    netfile: StrictStr = Field(min_length=1)
    sock: StrictStr = Field(pattern=r"^[^\x00/]+$")
    ibsim_pid: Pid
    sm_pids: list[Pid] = Field(default_factory=list)
    ibsim: IbsimState = Field(default_factory=IbsimState)


def read_state(run_dir: Path) -> tuple[HarnessState, dict[str, Any]]:
    """The state, and the document as written (rewritten whole when an SM is recorded)."""
    path = run_dir / STATE_FILE
    if not path.exists():
        raise InputError("no fabric here (run 'ibqos fabric up' first)", file=path)
    doc, text = read_json_text(
        path, hint="the state 'ibqos fabric up' wrote", limit=SMALL_DOC_LIMIT, what="a state file"
    )
    return validate(HarnessState, doc, path, text=text), doc
