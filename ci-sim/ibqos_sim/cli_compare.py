"""`ibqos compare-engines NET|dfN [--engines …] [--patterns …] [--loads …]`."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from ibqos.errors import InputError

from . import cli_args


@click.command("compare-engines")
@click.argument("fabric")
@click.option("--engines", default="dla,lash,dfsssp,updn,minhop", show_default=True)
@click.option("--patterns", default="uniform,stencil,hotspot", show_default=True)
@click.option("--loads", default="0.2,0.4,0.6,0.8,1.0", show_default=True)
@click.option("--time-us", type=click.FloatRange(10, 100_000), default=300.0, show_default=True)
@click.option("--warmup-us", type=click.FloatRange(0, 100_000), default=50.0, show_default=True)
@click.option("--buffer-packets", type=click.IntRange(1, 1024), default=16, show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs/compare-engines"),
    show_default=True,
)
def compare_engines(fabric, engines, patterns, loads, time_us, warmup_us, buffer_packets, out_dir):
    """Route FABRIC (an ibsim net file, or dfN) with each engine on real OpenSM, read it back
    (with the SA's per-pair SLs for lash and dfsssp) and simulate seed 003's traffic patterns:
    throughput against load per engine, with the SLs and VLs each one used (Table 2)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress
    from rich.table import Table

    from . import compare_engines as ce
    from .netfile import check_net
    from .sim import SimParams
    from .topology import from_spec

    engine_list = [e.strip() for e in engines.split(",") if e.strip()]
    pattern_list = [p.strip() for p in patterns.split(",") if p.strip()]
    bad = [p for p in pattern_list if p not in ce.PATTERNS]
    if bad or not pattern_list:
        raise InputError(f"patterns are {', '.join(ce.PATTERNS)}", field="--patterns")
    load_list = list(cli_args.loads(loads))
    params = SimParams(rate="QDR", mtu=4096, buffer_packets=buffer_packets, warmup_us=warmup_us, time_us=time_us)
    net_path = Path(fabric)
    if net_path.exists():
        check_net(net_path)
        topo = None
    else:
        topo = from_spec(fabric)
    out_dir.mkdir(parents=True, exist_ok=True)
    err = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="ibqos-compare-") as tmp:
        if topo is not None:
            net_path = topo.write_net(Path(tmp) / "fabric.net")
        with Progress(console=err, transient=True) as prog:
            task = prog.add_task("simulating", total=len(engine_list) * len(pattern_list) * len(load_list))
            results = ce.compare(
                net_path,
                engine_list,
                pattern_list,
                load_list,
                params,
                tick=lambda: prog.advance(task),
                run_dir=Path(tmp) / "run",
            )
    (out_dir / "compare.json").write_text(
        json.dumps(
            {
                "schema": "ibqos.compare-engines/1",
                "fabric": fabric,
                "loads": load_list,
                "params": params.model_dump(),
                "engines": [r.to_json() for r in results],
            },
            indent=1,
        )
    )
    ce.plot(results, pattern_list, out_dir / "compare.png")
    t = Table(title=escape(f"{fabric}: accepted traffic (%) at loads {', '.join(map(str, load_list))}"))
    for col in ["engine", "routed by", "SLs", "VLs", "credit loop", *pattern_list]:
        t.add_column(col, overflow="fold")
    for row in ce.table_rows(results, pattern_list):
        t.add_row(*map(escape, row))
    Console().print(t)
    for r in results:
        if r.credit_loop:
            click.secho(
                f"{r.engine}: CREDIT LOOP in the channel dependency graph (ibqos verify); "
                "a deadlock waits for the load and buffers that close it",
                fg="red",
            )
    click.echo(f"wrote {out_dir / 'compare.json'} and {out_dir / 'compare.png'}")
