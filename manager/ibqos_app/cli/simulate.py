"""`ibqos simulate RUNDIR`: packet-level simulation of the fabric a dry run read back."""

from __future__ import annotations

from pathlib import Path

import click
from ibqos.docfile import error_loc, error_message, got_note, option_error
from ibqos.errors import InputError
from ibqos.extras import require_plot
from ibqos.fabric.source import load_fabric
from ibqos.outpath import OUT_DIR
from ibqos.plan import load_plan
from ibqos.policy.yamlsrc import load_yaml
from ibqos_sim import sweeprun
from ibqos_sim.sim import (
    PATTERNS,
    SimParams,
    TrafficClass,
    TrafficSpec,
    classes_from_plan,
    overlay_plan_vlarb,
    parse_sweep,
)
from ibqos_sim.sim.points import Point
from ibqos_sim.sim.run import network_for
from pydantic import ValidationError
from rich.console import Console

from . import _sim_args as cli_args
from ._rundir import plan_beside


def load_run_fabric(rundir: Path, plan_path: Path | None):
    """RUNDIR/fabric.json (the read-back model), else OpenSM dumps in RUNDIR. A fabric.json
    path is accepted in place of RUNDIR. Ports the model has no VLArb for get the plan's, as a
    labelled overlay (returned: the result says which ports)."""
    if plan_path is None:
        # the run's plan as status and verify find it (in RUNDIR, or above its dumps): simulate
        # looked in RUNDIR alone, so OpenSM dumps in a dry run's directory were refused for the
        # VLArb their plan gives
        plan_path = plan_beside(rundir)
    plan = load_plan(plan_path) if plan_path else None
    loaded = load_fabric(rundir, require_sl2vl=False)
    fabric, source = loaded.fabric, loaded.path
    overlay = overlay_plan_vlarb(fabric, plan, str(plan_path)) if plan is not None else None
    return fabric, source, plan, overlay


def _traffic(pattern, process, sl, msg_bytes, classes_file, plan, src, dst, sls):
    classes = []
    if pattern == "mix":
        if classes_file:
            located = load_yaml(classes_file, what="a list of traffic classes")
            doc = located.data
            items = doc.get("classes") if isinstance(doc, dict) else doc
            if not isinstance(items, list) or not items or not all(isinstance(c, dict) for c in items):
                # an empty list too: the run would fall back to one pattern on --sls, not a mix
                raise InputError(
                    "not a list of traffic classes (name, sl, msg_bytes, rate, pattern)", file=classes_file, line=1
                )
            for i, c in enumerate(items):
                try:
                    classes.append(TrafficClass(**c))
                except (ValidationError, TypeError) as e:
                    err = e.errors()[0] if isinstance(e, ValidationError) else {"msg": str(e), "loc": ()}
                    loc = ("classes",) * isinstance(doc, dict) + (i,) + error_loc(err)
                    raise InputError(
                        located.boolean_note(loc, str(err.get("type", ""))) or error_message(err) + got_note(err),
                        file=classes_file,
                        line=located.line(loc),
                        field=".".join(str(x) for x in loc),
                    ) from e
        elif plan is not None:
            # each class offers its planned share of the link, scaled by --load: a sweep then
            # shows the classes from idle to full (all saturating, every load is the same)
            classes = [
                c.model_copy(update={"rate": round(plan.class_by_name(c.name).bandwidth.planned / 100, 6)})
                for c in classes_from_plan(plan, msg_bytes=msg_bytes)
            ]
        else:
            raise InputError("--traffic mix needs --classes FILE or a plan", field="--traffic")
        pattern = "uniform"
    elif pattern not in PATTERNS:
        raise InputError(f"unknown traffic pattern {pattern!r} (one of {', '.join(PATTERNS)}, mix)", field="--traffic")
    try:
        return TrafficSpec(
            pattern=pattern,
            process=process,
            sl=sl,
            msg_bytes=msg_bytes,
            classes=classes,
            src=src,
            dst=dst,
            sls=[int(x) for x in sls.split(",")] if sls else [0, 1, 2, 3],
        )
    except ValidationError as e:
        raise option_error(e) from e
    except ValueError as e:
        raise InputError(str(e), field="--sls") from e


def _link_defaults(rate, mtu, accounting, plan, console) -> tuple:
    """Rate, MTU and VLArb accounting from the plan the run was made with (one set of
    defaults for every command); a flag overrides, and says so."""
    defaults = (plan.fabric.rate, plan.fabric.mtu, plan.accounting) if plan else ("QDR", 4096, "byte")
    given = (rate, mtu, accounting)
    for name, flag, planned in zip(("rate", "mtu", "accounting"), given, defaults, strict=True):
        if plan and flag is not None and str(flag) != str(planned):
            console.print(f"note: --{name} {flag} overrides the plan's {planned}", highlight=False, markup=False)
    return tuple(d if g is None else g for g, d in zip(given, defaults, strict=True))


@click.command()
@click.argument("rundir", type=click.Path(path_type=Path), required=False)
@click.option(
    "--traffic",
    "pattern",
    default="uniform",
    show_default=True,
    help="uniform, hotspot, stencil, adversarial, twonode, or mix (QoS classes).",
)
@click.option("--load", type=float, default=None, help="Offered load, fraction of the link (0, 1].")
@click.option("--sweep", help="Load sweep START:STOP:STEP, e.g. 0.1:1.0:0.1.")
@click.option("--process", type=click.Choice(["poisson", "cbr"]), default="poisson", show_default=True)
@click.option("--sl", type=click.IntRange(0, 15), default=0, show_default=True, help="SL of single-class patterns.")
@click.option("--msg-bytes", type=click.IntRange(1, 1 << 30), default=4096, show_default=True)
@click.option(
    "--classes",
    "classes_file",
    type=click.Path(dir_okay=False),
    help="YAML list of classes for --traffic mix: name, sl, msg_bytes, rate|saturate, pattern.",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Plan: VLArb for ports the model lacks, classes for --traffic mix (default RUNDIR/plan.json).",
)
@click.option("--src", help="two-node: source CA (node description).")
@click.option("--dst", help="two-node: destination CA.")
@click.option("--sls", help="two-node: SLs, one saturating flow each (default 0,1,2,3).")
@click.option("--rate", default=None, help="Link rate: QDR, FDR, EDR, HDR or Gb/s (default: the plan's, else QDR).")
@click.option(
    "--mtu", type=click.IntRange(64, 65535), default=None, help="MTU in bytes (default: the plan's, else 4096)."
)
@click.option(
    "--buffer-packets",
    type=click.IntRange(1, 1024),
    default=16,
    show_default=True,
    help="Input buffer per port and VL, in MTU packets.",
)
@cli_args.switch_model_options
@click.option(
    "--accounting",
    type=click.Choice(["byte", "packet"]),
    default=None,
    help="VLArb accounting (docs/arbiter.md); default byte, or the plan's.",
)
@click.option("--prop-ns", type=float, default=10.0, show_default=True)
@click.option("--switch-ns", type=float, default=100.0, show_default=True)
@click.option("--warmup-us", type=float, default=100.0, show_default=True)
@click.option("--time-us", type=float, default=500.0, show_default=True, help="Measured window.")
@click.option(
    "--deadlock-us",
    type=float,
    default=50.0,
    show_default=True,
    help="Stop when waiting packets have not moved this long.",
)
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=OUT_DIR,
    help="Where sim.json and the plots go (default RUNDIR/sim).",
)
@click.option("--plot", is_flag=True, help="Write PNG plots (load-throughput, latency per SL).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON instead of tables.")
@cli_args.sweep_options
@click.option("--wait/--no-wait", default=True, show_default=True, help="--slurm: wait for the array and merge.")
@click.option(
    "--collect",
    type=click.Path(file_okay=False, path_type=Path),
    help="Merge a --slurm --no-wait sweep: the directory it printed.",
)
def simulate(
    rundir,
    pattern,
    load,
    sweep,
    process,
    sl,
    msg_bytes,
    classes_file,
    plan_path,
    src,
    dst,
    sls,
    rate,
    mtu,
    buffer_packets,
    voq,
    input_reads,
    voq_buffers,
    accounting,
    prop_ns,
    switch_ns,
    warmup_us,
    time_us,
    deadlock_us,
    seed,
    out_dir,
    plot,
    as_json,
    jobs,
    slurm,
    slurm_partition,
    slurm_time,
    slurm_account,
    slurm_opt,
    wait,
    collect,
):
    """Simulate RUNDIR's read-back fabric (fabric.json) packet by packet.

    Routes, SL2VL and VLArb are exactly the programmed ones. A sweep's points run on every
    core (--jobs), or as a Slurm job array (--slurm). Exits 1 on a deadlock."""
    if plot:
        require_plot("--plot")
    if collect is not None:
        if rundir is not None or slurm:
            raise InputError("--collect merges a sweep already run: give it alone", field="--collect")
        results, merge = sweeprun.collect(collect)
        return sweeprun.finish(results, merge, Console(stderr=as_json), as_json)
    if rundir is None:
        raise InputError("give RUNDIR (or --collect DIR)", field="RUNDIR")
    slurm_opts = cli_args.slurm_choice(jobs, slurm, slurm_partition, slurm_time, slurm_account, slurm_opt, wait)
    if load is not None and sweep:
        raise InputError("give --load or --sweep, not both", field="--sweep")
    if load is not None and not 0 < load <= 1:
        raise InputError(f"{load}: the offered load must be in (0, 1] of the link rate", field="--load")
    loads = parse_sweep(sweep) if sweep else [load if load is not None else 0.8]
    fabric, source, plan, overlay = load_run_fabric(rundir, plan_path)
    console = Console(stderr=as_json)
    rate, mtu, accounting = _link_defaults(rate, mtu, accounting, plan, console)
    try:
        params = SimParams(
            rate=rate,
            mtu=mtu,
            buffer_packets=buffer_packets,
            voq=voq,
            input_reads=input_reads,
            voq_buffers=voq_buffers,
            accounting=accounting,
            prop_ns=prop_ns,
            switch_ns=switch_ns,
            warmup_us=warmup_us,
            time_us=time_us,
            deadlock_us=deadlock_us,
            seed=seed,
        )
    except ValidationError as e:
        raise option_error(e) from e
    traffic = _traffic(pattern, process, sl, msg_bytes, classes_file, plan, src, dst, sls)
    if sweep and traffic.classes and all(c.rate == "saturate" for c in traffic.classes):
        raise InputError(
            "every class saturates, so the load changes nothing: give the classes a rate, or drop --sweep",
            field="--sweep",
        )
    net = network_for(fabric, params, source=str(source))  # the model's errors, before any point runs
    out_dir = out_dir or (rundir / "sim" if rundir.is_dir() else rundir.parent / "sim")
    name = pattern + ("-sweep" if sweep else f"-{loads[0]:.2f}")
    meta = {"fabric": str(source), "traffic": traffic.model_dump(), "loads": loads}
    if overlay is not None and overlay.ports:
        meta["vlarb_overlay"] = overlay.to_json(fabric)
        if not as_json:
            console.print(f"note: {overlay.note()} (ports in the results)", markup=False, highlight=False)
    merge = {
        "out_dir": str(out_dir),
        "name": name,
        "meta": meta,
        "plot": plot,
        "title": f"{pattern}, {net.n_endpoints} CAs",
    }
    fabrics = {str(source): fabric}
    points = [Point(str(source), traffic, params, ld) for ld in loads]
    if slurm_opts is not None:
        submitted = sweeprun.run_slurm(fabrics, points, merge, slurm_opts, wait, console)
        if submitted is None:  # --no-wait: the jobs run on
            return None
        results = submitted
    else:
        results = sweeprun.run_local(fabrics, points, jobs, console)
    return sweeprun.finish(results, merge, console, as_json)
