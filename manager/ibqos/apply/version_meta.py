"""A version's meta.json: when and by whom it was written, and what it was made from. The one
description of the document: ConfigSet writes every version's through VersionMeta and reads it
back through it (history, status's plan hash, what a rollback restores as absent, which
versions are the admin's own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, StrictStr, ValidationError

from .stamp import stamp

_LAST_TIME = 253402300799  # 9999-12-31: any later (or nan, inf) is no time a version was written


class VersionMeta(BaseModel):
    """Every field is optional: a store from an older ibqos lacks some, and a field of another
    type than ibqos writes (the file edited by hand) is read as missing (`read`)."""

    # fields of a newer ibqos are not this one's to read; JSON types as written, none coerced
    model_config = ConfigDict(extra="ignore", frozen=True)

    time: Annotated[float, Strict(), Field(ge=0, le=_LAST_TIME, allow_inf_nan=False)] | None = None
    who: StrictStr | None = None
    plan: StrictStr | None = None  # the plan file applied, absolute
    plan_sha256: StrictStr | None = None  # its bytes' hash: a master and its standby agree on it
    policy_sha256: StrictStr | None = None
    rollback_of: StrictStr | None = None  # the version a rollback copied
    # roles the version holds no file for (confset's module doc); always written for the
    # admin's own files, even empty, so that a store from before the mark is told apart
    absent: list[StrictStr] | None = None
    adopted_from: dict[str, StrictStr] | None = None  # the admin's own files: role -> path

    @classmethod
    def read(cls, path: Path) -> VersionMeta:
        """`path`'s meta. A field of another type than ibqos writes is left out, the others
        kept, and an unreadable file (or one that is no JSON object) is an empty meta: the
        version's manifest names such an edit TAMPERED in one line (before a hand-typed meta,
        history ended in an internal error on a list, a string time or a time of 1e400)."""
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls()
        if not isinstance(doc, dict):
            return cls()
        try:
            return cls.model_validate(doc)
        except ValidationError as e:
            bad = {err["loc"][0] for err in e.errors() if err["loc"]}
            return cls.model_validate({k: v for k, v in doc.items() if k not in bad})

    def stamped_text(self) -> str:
        """The document a new version is written with: these fields, and now and who (stamp)."""
        return json.dumps(self.model_copy(update=stamp()).model_dump(exclude_none=True), indent=1) + "\n"
