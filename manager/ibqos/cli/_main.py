"""The command group and the one place where exceptions become exit codes."""

from __future__ import annotations

import errno
import importlib
import importlib.util
import logging
import sys

import click

from ..errors import IbqosError

# name -> "module:attribute". Each command lives in its own module.
COMMANDS = {
    "fabric": ("ibqos_sim.cli_fabric:fabric", "Bring ibsim fabrics up/down and run OpenSM on them."),
    "verify": ("ibqos.cli.verify:verify", "Verify routes, hops and deadlock freedom of a fabric."),
    "analyze": ("ibqos.cli.analyze:analyze", "Analyze VLArb tables: per-VL share and entry distance."),
    "plan": ("ibqos.cli.plan:plan", "Synthesize VLArb tables and the SL2VL plan from a policy."),
    "render": ("ibqos.cli.render:render", "Render a plan to OpenSM and plugin configuration files."),
    "simulate": ("ibqos_sim.cli_simulate:simulate", "Packet-level simulation of a read-back fabric."),
    "paper": ("ibqos_sim.cli_paper:paper", "Reproduce a seed paper's experiment (seed003-5.1)."),
    "compare-engines": ("ibqos_sim.cli_compare:compare_engines",
                        "Route one fabric with each OpenSM engine and simulate them side by side."),
    "testbed": ("ibqos_testbed.cli:testbed", "Validate a plan on hardware with perftest."),
    "dryrun": ("ibqos.cli.dryrun:dryrun", "Policy to simulated verdict on an ibsim fabric."),
    "apply": ("ibqos.cli.apply:apply", "Apply a plan to a running OpenSM, verify, roll back on failure."),
    "status": ("ibqos.cli.status:status", "Show what the fabric is programmed with now."),
    "demo": ("ibqos.cli.demo:demo", "The dry run on the embedded default policy and fabric."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(n for n in COMMANDS if _available(n))

    def get_command(self, ctx, name):
        if name not in COMMANDS or not _available(name):
            return None
        mod, attr = COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(mod), attr)

    def format_commands(self, ctx, formatter):
        rows = [(n, COMMANDS[n][1]) for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(name: str) -> bool:
    try:
        return importlib.util.find_spec(COMMANDS[name][0].split(":")[0]) is not None
    except ModuleNotFoundError:
        return False


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging (repeat for debug).")
@click.version_option(package_name="ibqos")
def cli(verbose: int) -> None:
    """ibqos: turn InfiniBand QoS policies into verified, deadlock-free fabric configuration."""
    logging.basicConfig(level=[logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)],
                        format="ibqos: %(message)s")


def main(argv: list[str] | None = None) -> None:
    # A pipe or a log file gets each line as it is printed (apply's steps, a long dry run),
    # not a block at exit: an admin tails it, and a killed run keeps what it said.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
    try:
        rc = cli.main(args=argv, prog_name="ibqos", standalone_mode=False)
    except IbqosError as e:
        click.echo(f"ibqos: error: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("ibqos: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("ibqos: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as e:
        if e.errno == errno.EPIPE:
            sys.exit(0)
        click.echo(f"ibqos: error: {e.filename or ''}: {e.strerror}", err=True)
        sys.exit(2)
    except UnicodeDecodeError as e:
        # every file is meant to be read through ibqos.inputfile, which names it; this is the
        # net for one that is not
        click.echo(f"ibqos: error: input is not UTF-8 (byte {e.start})", err=True)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 - the one place a bug meets the admin
        if logging.getLogger().isEnabledFor(logging.INFO):
            raise
        click.echo(f"ibqos: internal error: {type(e).__name__}: {e} (this is a bug in ibqos; "
                   "'ibqos -v ...' shows where)", err=True)
        sys.exit(70)
    sys.exit(rc if isinstance(rc, int) else 0)
