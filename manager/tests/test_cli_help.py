"""`ibqos --help` lists every command with its one-line help without importing any command's
module (each is loaded only when it runs: `ibqos --help` had become ~1 s because it imported
them all, numpy, pydantic models and the simulator included). The one-line help is read from
the command function's docstring in the module's source; it must be exactly what click makes
from the loaded command, so the listing cannot drift from `ibqos CMD --help`."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest
from ibqos_app.cli import _main
from ibqos_app.cli._main import GROUP, main, short_help

COMMANDS = sorted(importlib.metadata.entry_points(group=GROUP), key=lambda ep: ep.name)


@pytest.mark.parametrize("ep", COMMANDS, ids=[ep.name for ep in COMMANDS])
def test_listed_help_is_the_loaded_commands(ep):
    cmd = ep.load()
    assert short_help(ep) == cmd.get_short_help_str(limit=60) != ""


def test_help_lists_every_command_and_imports_none():
    probe = (
        "import sys\n"
        "from ibqos_app.cli._main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        f"mods = {sorted({ep.module for ep in COMMANDS})!r}\n"
        "print('IMPORTED', [m for m in mods if m in sys.modules])\n"
    )
    cp = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    out, _, imported = cp.stdout.rpartition("IMPORTED ")
    assert imported.strip() == "[]", imported
    listed = out.split("Commands:\n", 1)[1]
    for ep in COMMANDS:
        first = short_help(ep).split()[0]
        assert any(line.split()[:2] == [ep.name, first] for line in listed.splitlines()), (ep.name, listed)


def test_a_command_that_cannot_load_costs_only_itself(capsys, monkeypatch):
    """A command whose module (or a dependency of it) is missing from this installation is
    still listed; run, it is one line and exit 3 (an external component missing)."""
    ghost = importlib.metadata.EntryPoint("ghost", "ibqos_app.cli.no_such_module:ghost", GROUP)
    monkeypatch.setattr(_main, "_commands", lambda: {**{ep.name: ep for ep in COMMANDS}, "ghost": ghost})
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "  ghost" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["ghost", "--help"])
    err = capsys.readouterr().err
    assert e.value.code == 3 and err == (
        "ibqos: error: ghost cannot run here: No module named 'ibqos_app.cli.no_such_module'\n"
    ), err
