"""Text the fabric provides, printed through rich as it is (ibqos.term.literal): a node
description is whatever bytes a switch or an HCA reports, `[`, `]` and `\\` included."""

from __future__ import annotations

import io

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


def test_the_monitors_view_prints_a_link_named_by_such_a_description_as_it_is(tmp_path):
    """The monitor's terminal view named each link `NODE[PORT] → PEER[PORT]` in rich markup,
    unescaped: the switch below was shown as `dual HCA-1 [1] x 🆗 end[1] → ca[1]` (the markup
    taken, 'x' in bold, both backslashes gone, an emoji). One link sending on best-effort's SL,
    judged as the monitor does."""
    from ibqos.monitor.counters import Sample
    from ibqos.monitor.judge import judge
    from ibqos.monitor.view import render
    from monitor_helpers import link_fabric, per_sl, sample_doc
    from rich.console import Console

    plan, _ = make_plan_file(tmp_path, "a", 40)
    fabric = link_fabric()
    sw = next(n for n in fabric.nodes.values() if n.desc == "sw")
    sw.desc = DESC
    be = next(c for c in plan.classes if c.name == "best-effort").sls[0]

    def sample(t: float, words: int) -> Sample:
        ports = [
            {"guid": "0x20", "port": 1, "lid": 1, "xmit_data_sl": per_sl({be: words}), "errors": {}},
            {"guid": "0x30", "port": 1, "lid": 2, "xmit_data_sl": per_sl({}), "errors": {}},
        ]
        return Sample.from_json(sample_doc(t, ports))

    judged = judge(plan, fabric, sample(0.0, 0), sample(1.0, 1000))
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(render(judged, plan))
    rows = [line for line in console.export_text().splitlines() if "→" in line]
    assert rows and all(f"{DESC}[1] → ca[1]" in row for row in rows), rows
