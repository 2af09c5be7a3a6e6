"""Text the fabric provides, printed through rich as it is (ibqos.term.literal): a node
description is whatever bytes a switch or an HCA reports, `[`, `]` and `\\` included."""

from __future__ import annotations

import pytest
from apply_helpers import child_env, make_plan_file, sm_on_plan_a

pytestmark = pytest.mark.fabric

# a bracketed port as firmware writes it, markup, an emoji code and a trailing backslash
DESC = r"dual HCA-1 \[1] [bold]x[/bold] :ok: end" + "\\"


def _named(text: str) -> str:
    """The net file with one CA (not the SM's) described as DESC (ibsim: `# "..."`)."""
    record = 'Hca\t1 "ca-g1-s0-h0"\n'
    assert record in text
    return text.replace(record, f'Hca\t1 "ca-g1-s0-h0" # "{DESC}"\n')


def test_a_node_description_with_brackets_and_backslashes_is_printed_as_the_fabric_has_it(ibqos_cli, tmp_path):
    """`ibqos status --live --plan B` on a fabric running plan A: every port differs, each '≠'
    line names its node by description. Before, the rich.markup.escape of each print dropped
    the backslash of `\\[1]` (markup's escaped bracket), doubled the trailing one, and printed
    :ok: as an emoji; `ibqos monitor`'s view and a few titles did not escape at all."""
    with sm_on_plan_a(tmp_path, net_edit=_named) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 25)
        env = child_env({"COLUMNS": "400"})  # one line each, not wrapped
        r = ibqos_cli("status", "--live", "--plan", path_b, "--sim-socket", h.sock, env=env)
        assert sm.alive()
    assert r.returncode == 1, r.stdout + r.stderr
    named = [line for line in r.stdout.splitlines() if "dual HCA-1" in line]
    assert named and all(line.startswith(f"≠ {DESC}:1 ") for line in named), named
