"""Why a perftest process failed, in one line an admin can act on.

The patterns are perftest's and ssh's own messages: perftest 4.5 prints "Did not detect
devices" (libibverbs lists no device at all), older releases "No IB devices found", and
"IB device X not found" when -d names a device that is absent; "Couldn't listen to port N"
when the -p port is taken; ssh exits 255 with its reason on stderr.
"""

from __future__ import annotations

import re

_NO_DEVICE = re.compile(
    r"Did not detect devices|No IB devices found|"
    r"Unable to find the Infiniband/RoCE device"
)
_DEVICE_MISSING = re.compile(r"IB device (\S+) not found")
_PORT_BUSY = re.compile(r"Couldn't listen to port (\d+)")
_NO_SERVER = re.compile(r"Couldn't connect to (\S+)")
_SSH = re.compile(
    r"^ssh: .*|Permission denied.*|Host key verification failed.*|"
    r"Connection (?:refused|timed out|closed).*",
    re.MULTILINE,
)
_NOISE = re.compile(r"^ibqos-remote-pid \d+$|Conflicting CPU frequency|^\s*WARNING")

EXIT_NOT_FOUND = 127
EXIT_SSH = 255
EXIT_REMOTE_TIMEOUT = 124  # coreutils timeout on the node


# PLR0911: one return per diagnosis, in the order they are tried
def explain(  # noqa: PLR0911
    *,
    tool: str,
    host: str,
    returncode: int | None,
    stderr: str,
    stdout: str = "",
    timed_out: bool = False,
    timeout: float | None = None,
    remote: bool = False,
) -> str:
    text = stderr + "\n" + stdout
    if timed_out or (remote and returncode == EXIT_REMOTE_TIMEOUT):
        return (
            f"{tool} on {host} timed out after {timeout:g} s and was killed"
            if timeout
            else f"{tool} on {host} timed out and was killed"
        )
    if remote and returncode == EXIT_SSH and (m := _SSH.search(stderr)):
        return f"host {host} unreachable: {m.group(0).strip()}"
    if returncode == EXIT_NOT_FOUND or re.search(
        rf"{re.escape(tool)}: (?:command )?not found|"
        rf"failed to run command .{re.escape(tool)}",
        stderr,
    ):
        return f"{tool} not found on {host}: install perftest there"
    if m := _NO_DEVICE.search(text):
        return f"no RDMA device on {host} ({tool}: {m.group(0)})"
    if m := _DEVICE_MISSING.search(text):
        return f"RDMA device {m.group(1)} not found on {host}"
    if m := _PORT_BUSY.search(text):
        return f"TCP port {m.group(1)} already in use on {host}"
    if m := _NO_SERVER.search(text):
        return f"{tool} on {host} could not reach its server at {m.group(1)}"
    line = next((ln.strip() for ln in stderr.splitlines() if ln.strip() and not _NOISE.search(ln)), "")
    if returncode is not None and returncode < 0:
        return f"{tool} on {host} killed by signal {-returncode}" + (f": {line}" if line else "")
    return f"{tool} on {host} exited with {returncode}" + (f": {line}" if line else "")
