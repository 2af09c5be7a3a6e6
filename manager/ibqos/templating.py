"""The one Jinja2 environment: every file ibqos writes for another tool comes from templates/."""

from __future__ import annotations

import functools

import jinja2

from .paths import templates_dir


@functools.cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        # HTML escapes what it shows (file and node names, rendered config); config files
        # for other tools are written as rendered
        autoescape=lambda name: name is not None and ".html" in name,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(template: str, **context: object) -> str:
    return _env().get_template(template).render(**context)
