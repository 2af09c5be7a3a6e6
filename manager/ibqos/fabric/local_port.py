"""The local port a fabric access goes out of: (CA name, port number) of a port GUID.

A dual-rail SM host has one port per subnet and runs one OpenSM per port (Debian's
`opensm@GUID`, `--guid %I`). libibumad, the diags and the read-back take the first port when
told none, so an apply for the second OpenSM would read back, verify and judge the other
subnet. Every access for an OpenSM therefore names its port: the diags `-C CA -P PORT`, the
read-back its `-C/-P`, the SA queries `mad_rpc_open_port(CA, PORT)`.

The ports are what `ibstat` lists: libibumad reads them from
/sys/class/infiniband/CA/ports/N (the port GUID is the low half of gids/0), in the CA order
OpenSM itself takes them in; under umad2sim the same call reads the fake tree the shim builds
for its process (`sys-<pid>/sys/class/infiniband/ibsim0/`, one CA, one port: the node
SIM_HOST names) in the working directory and removes at exit. Running `ibstat` (not reading
/sys here) is what makes the mapping the one the tools see, on a real host and on ibsim
alike.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass

from ..errors import ExternalError, InputError
from ..paths import require_tool
from ..proc import run_command

_CA = re.compile(r"^CA '([^']+)'", re.M)
_PORT = re.compile(r"^\s*Port (\d+):\s*$(.*?)(?=^\s*Port \d+:\s*$|\Z)", re.M | re.S)
_STATE = re.compile(r"^\s*State: (\S+)", re.M)
_GUID = re.compile(r"^\s*Port GUID: (0x[0-9a-fA-F]+)", re.M)


@dataclass(frozen=True)
class LocalPort:
    ca: str
    port: int
    guid: int
    up: bool  # link not Down: OpenSM told no GUID binds the first such port

    def diag_args(self) -> list[str]:
        """The infiniband-diags options that send a tool's MADs out of this port."""
        return ["-C", self.ca, "-P", str(self.port)]

    def __str__(self) -> str:
        return f"0x{self.guid:016x} ({self.ca} port {self.port})"


def parse_ibstat(text: str) -> list[LocalPort]:
    """The ports of `ibstat` output (every CA), in its order."""
    found = []
    heads = list(_CA.finditer(text))
    for i, head in enumerate(heads):
        body = text[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        for m in _PORT.finditer(body):
            guid, state = _GUID.search(m[2]), _STATE.search(m[2])
            if guid is not None:
                found.append(LocalPort(head[1], int(m[1]), int(guid[1], 16), state is not None and state[1] != "Down"))
    return found


def bound_by_default(ports: list[LocalPort]) -> LocalPort:
    """The port OpenSM 3.3.23 binds when told no GUID (main.c get_port_guid): the first whose
    link is not Down, else the first."""
    return next((p for p in ports if p.up), ports[0])


def local_ports(env: dict[str, str] | None) -> list[LocalPort]:
    """This host's IB ports, or one error line when none can be listed."""
    # umad2sim builds its fake sysfs (sys-<pid>/) in the client's working directory
    with tempfile.TemporaryDirectory(prefix="ibqos-ibstat-") as cwd:
        cp = run_command([require_tool("ibstat", "infiniband-diags")], env=env, timeout=30, check=False, cwd=cwd)
    ports = parse_ibstat(cp.stdout) if cp.returncode == 0 else []
    if not ports:
        why = cp.stderr.strip().splitlines()[-1:] or [f"exit {cp.returncode}"]
        raise ExternalError(f"no local InfiniBand port: ibstat lists none ({why[0]})")
    return ports


def port_of(guid: int | None, env: dict[str, str] | None, given: str) -> LocalPort:
    """The local port with port GUID `guid`; None: the port OpenSM binds when told none (the
    first whose link is not Down, else the first). `given` says where the GUID came from, for
    the refusal of one that is not a port of this host (exit 2)."""
    ports = local_ports(env)
    if guid is None:
        return bound_by_default(ports)
    for p in ports:
        if p.guid == guid:
            return p
    raise InputError(
        f"0x{guid:016x} is not a port of this host (its ports: {', '.join(map(str, ports))}): "
        "the OpenSM cannot bind it, and ibqos would read another subnet",
        field=given,
    )
