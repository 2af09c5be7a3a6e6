"""`ibqos fabric up|run-sm|down`: an ibsim fabric that outlives one command, for manual work."""

from __future__ import annotations

from pathlib import Path

import click
from ibqos.errors import InputError
from ibqos_sim.harness import Harness, engine_chain, stop_found
from ibqos_sim.harness.netfile import check_net
from ibqos_sim.harness.state import STATE_FILE
from ibqos_sim.harness.topology import from_spec

RUN_DIR = click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("ibqos-run"),
    show_default=True,
    help="Where the fabric's logs, dumps and state live.",
)


@click.group(no_args_is_help=False)  # one line without a command (_main.cli)
def fabric() -> None:
    """Bring ibsim fabrics up/down and run OpenSM on them."""


@fabric.command()
@click.argument("net", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--topology", "spec", help="Generate the fabric instead: dfN, dragonfly:a=4,p=2,h=2, fattree:...")
@RUN_DIR
def up(net: Path | None, spec: str | None, run_dir: Path) -> None:
    """Start ibsim on NET (or a generated --topology) and leave it running."""
    if (net is None) == (spec is None):
        raise InputError("give exactly one of NET or --topology", field="fabric up")
    if (run_dir / "harness.json").exists():
        # a second `up` must not orphan the first fabric's ibsim (and its OpenSMs)
        old = Harness.attach(run_dir)
        if old.ibsim is not None and old.ibsim.alive():
            raise InputError(
                f"a fabric is already up here (ibsim pid {old.ibsim.pid}): "
                f"'ibqos fabric down --run-dir {run_dir}' first",
                file=run_dir,
            )
        old.stop()  # stale state: stop any OpenSM it still names
    topo = from_spec(spec) if spec else None
    if net is not None:
        check_net(net)
    run_dir.mkdir(parents=True, exist_ok=True)
    if topo is not None:
        net = topo.write_net(run_dir / "fabric.net")
    assert net is not None  # NET or --topology, checked above
    h = Harness(net, run_dir)
    h.forget_sm_cache()  # another fabric: the last one's LIDs and groups are no SM cache of it
    h.start()
    h.detach()
    click.echo(f"fabric up: {net} (ibsim pid {h.run_dir_state()['ibsim_pid']}) in {h.run_dir}")
    click.echo(f"  clients: IBSIM_SOCKNAME={h.sock} LD_PRELOAD={h.env['LD_PRELOAD']}")


@fabric.command("run-sm")
@RUN_DIR
@click.option("--engine", default="minhop", show_default=True, help="routing_engine list, e.g. dla,minhop")
@click.option("--plugin/--no-plugin", default=None, help="Load libibqos.so (default: when the engine list names dla)")
@click.option("--plugin-options", type=click.Path(dir_okay=False, path_type=Path), help="The plugin's table file.")
@click.option(
    "--conf-file",
    "conf_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="opensm.conf fragment to append (repeatable).",
)
@click.option("--daemon", is_flag=True, help="Keep OpenSM running (stopped by 'fabric down').")
def run_sm(
    run_dir: Path,
    engine: str,
    plugin: bool | None,
    plugin_options: Path | None,
    conf_files: tuple[Path, ...],
    daemon: bool,
) -> None:
    """Run OpenSM on the fabric: once (default) or as a daemon."""
    h = Harness.attach(run_dir)
    if plugin is None:
        plugin = "dla" in engine_chain(engine)
    if daemon:
        sm = h.start_sm(engine=engine, plugin=plugin, plugin_options=plugin_options, conf_files=conf_files)
        h.record_sm(sm)
        h.detach()
        click.echo(f"OpenSM daemon pid {sm.pid}, {sm.sweeps()} sweep(s); log {sm.log}")
        return
    run = h.run_sm(engine=engine, plugin=plugin, plugin_options=plugin_options, conf_files=conf_files)
    h.detach()
    engines = ", ".join(run.configured_engines()) or "none"
    t = run.engine_seconds()
    click.echo(
        f"OpenSM done in {run.wall_s:.2f} s: tables configured by {engines}"
        + (f" (engine {t * 1e3:.1f} ms)" if t is not None else "")
        + f"; dumps in {run.dumps}"
    )


@fabric.command()
@RUN_DIR
def down(run_dir: Path) -> None:
    """Stop every process the fabric in RUN_DIR started, by PID."""
    try:
        h = Harness.attach(run_dir)
    except InputError as e:
        if not (run_dir / STATE_FILE).exists():
            raise  # no fabric here
        # a state file cut short or garbled names no PID to trust: stop what is provably this
        # fabric's (stop_found), and say what could not be done
        stopped = stop_found(run_dir)
        done = "no ibsim or OpenSM of it runs"
        if stopped:
            done = f"stopped {', '.join(stopped)}, found in this run directory"
        raise InputError(
            f"{e.detail}; cannot tell from it which processes 'fabric up' started: {done}; any other is left "
            "running; remove the file before the next 'fabric up'",
            file=e.file,
            line=e.line,
            field=e.field,
        ) from e
    h.stop()
    click.echo(f"fabric down: {run_dir}")
