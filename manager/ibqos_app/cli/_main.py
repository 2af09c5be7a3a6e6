"""The command group and the one place where exceptions become exit codes (ibqos.errors
lists them). Commands signal a defect one way only: they raise (VerificationFailed for exit
1); a command that returns succeeded."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import logging
import sys
import traceback
from pathlib import Path

import click
from ibqos.errors import ExternalError, IbqosError, InternalError, bug_line, one_line
from ibqos.interrupt import Interrupted, install
from ibqos.outpath import refuse_outputs_onto_inputs

from ibqos_app.cli import _stdio

# Subcommands are registered as entry points (pyproject.toml, group "ibqos.commands"), one module
# per command in this package, each imported only when it runs: `ibqos plan` loads neither the
# simulator nor numpy (ci-sim/tests/test_wheel.py), and a command's imports are at its top.
GROUP = "ibqos.commands"


@functools.cache
def _commands() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=GROUP)}


def short_help(ep: importlib.metadata.EntryPoint) -> str:
    """The one-line help of the command `ep` names, as click makes it from the function's
    docstring, read from the module's source without running it: `ibqos --help` lists every
    command without importing any (test_cli_help.py holds it equal to the loaded command's)."""
    spec = importlib.util.find_spec(ep.module)
    if spec is None or spec.origin is None:
        return ""
    tree = ast.parse(Path(spec.origin).read_text(), spec.origin)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ep.attr), None)
    doc = ast.get_docstring(fn) if fn is not None else None
    return click.Command(ep.name, help=doc).get_short_help_str(limit=60)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_commands())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        ep = _commands().get(name)
        if ep is None:
            return None
        try:
            cmd: click.Command = ep.load()
        except ImportError as e:
            # a command's dependency missing from this installation (numpy uninstalled
            # beside plan, analyze and render) costs that command, not the others
            raise ExternalError(f"{name} cannot run here: {e}") from e
        _check_outputs_first(cmd)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short_help(ep)) for name, ep in sorted(_commands().items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _check_outputs_first(cmd: click.Command) -> None:
    """Every command (and a group's subcommands) checks its output paths against its inputs
    before it runs (outpath.refuse_outputs_onto_inputs)."""
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _check_outputs_first(sub)
        return
    inner = cmd.callback
    if inner is None or getattr(inner, "_outputs_checked", False):
        return

    @functools.wraps(inner)
    def checked(*args: object, **kwargs: object) -> object:
        refuse_outputs_onto_inputs(click.get_current_context())
        return inner(*args, **kwargs)

    checked._outputs_checked = True  # type: ignore[attr-defined]
    cmd.callback = checked


# no_args_is_help=False on every group: click 8.2+ raises a group's whole help text as the
# usage error of `ibqos` or `ibqos testbed` alone (exit 2, an 'ibqos: error: Usage: ...' block),
# click 8.1 prints it and exits 0; without it, both say "Missing command." (one line, exit 2)
@click.group(cls=LazyGroup, no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging (repeat for debug).")
@click.version_option(package_name="ibqos")
def cli(verbose: int) -> None:
    """ibqos: turn InfiniBand QoS policies into verified, deadlock-free fabric configuration."""
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)], format="ibqos: %(message)s"
    )


def main(argv: list[str] | None = None) -> None:
    _stdio.prepare()  # closed, a reader gone, another encoding: the exit code stays the verdict
    install()  # SIGTERM and SIGHUP stop a command as Ctrl-C does: children stopped, exit 128+N
    try:
        cli.main(args=argv, prog_name="ibqos", standalone_mode=False)
    except IbqosError as e:
        if logging.getLogger().isEnabledFor(logging.INFO):
            # -v: where it came from, with the exception that caused it
            traceback.print_exception(e, file=sys.stderr)
        said = "internal error" if isinstance(e, InternalError) else "error"
        click.echo(f"ibqos: {said}: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort as e:
        # click turns the KeyboardInterrupt (Interrupted: any of the signals) into Abort;
        # click 8.1.x raises it inside the handler (__context__), newer ones `from` it (__cause__)
        _interrupted(e.__cause__ or e.__context__)
    except click.UsageError as e:
        # a bad option or argument is bad input like any other: one line (click's own
        # message names the option), not the usage block; --help shows that
        sub = e.ctx.command_path.partition(" ")[2] if e.ctx else ""
        ctx = f" (see 'ibqos {sub} --help')" if sub else " (see 'ibqos --help')"
        # click lists a choice's values on lines of their own ('Choose from:\n\ta,\n\tb')
        said = e.format_message().replace(":\n\t", ": ").replace(",\n\t", ", ")
        click.echo(f"ibqos: error: {one_line(said)}{ctx}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except KeyboardInterrupt as e:
        _interrupted(e)
    except _stdio.ReaderGone:
        sys.exit(_stdio.READER_GONE_EXIT)  # nobody is left to read a line: none
    except OSError as e:
        # an OSError made from a message alone (ctypes' failed load, multiprocessing) has no
        # strerror and no file: its message is the line (before: 'ibqos: error: : None')
        where = f"{one_line(str(e.filename))}: " if e.filename else ""
        click.echo(f"ibqos: error: {where}{e.strerror or one_line(str(e)) or type(e).__name__}", err=True)
        sys.exit(2)
    except UnicodeDecodeError as e:
        # every file is meant to be read through ibqos.inputfile, which names it; this is the
        # net for one that is not
        click.echo(f"ibqos: error: input is not UTF-8 (byte {e.start})", err=True)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 - the one place a bug meets the admin
        if logging.getLogger().isEnabledFor(logging.INFO):
            raise
        click.echo(f"ibqos: internal error: {bug_line(e)}", err=True)
        sys.exit(InternalError.exit_code)
    # a command that found a defect raised VerificationFailed (exit 1): returning is success
    sys.exit(0)


def _interrupted(e: BaseException | None) -> None:
    sig = e if isinstance(e, Interrupted) else None
    click.echo(f"ibqos: interrupted by {sig.name}" if sig else "ibqos: interrupted", err=True)
    sys.exit(sig.exit_code if sig else 130)
