"""Load the fabric model from the running fabric, in one process: the ibqos-readback reader.

The reader (manager/readback, C over libibumad/libibmad) discovers the fabric by directed
route from a local port and reads NodeInfo, NodeDescription, PortInfo, SwitchInfo, every LFT
block, the SL2VL table of every (in, out) pair of linked switch ports and CA ports, and the
VLArb tables of ports with more than one data VL. It keeps a window of SMPs in flight, so the
cost is the fabric's answer rate, not a round trip per MAD.

On ibsim, `env` carries LD_PRELOAD=libumad2sim.so and the fabric's IBSIM_SOCKNAME
(Harness.env); on a real SM host it is the plain environment.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .. import paths
from ..errors import ExternalError, ProcessError
from ..proc import run_command
from .local_port import LocalPort
from .model import Fabric

READER = "manager/readback/ibqos-readback"


def reader_path() -> Path:
    """The built reader, or one error line naming the make target."""
    return paths.built(READER)


def read_live(
    env: dict[str, str] | None = None,
    *,
    timeout: float = 120,
    at: LocalPort | None = None,
    window: int | None = None,
    mad_timeout_ms: int | None = None,
    retries: int | None = None,
) -> Fabric:
    """Read the fabric behind local port `at` (None: libibumad's first port)."""
    opts = (("-w", window), ("-t", mad_timeout_ms), ("-r", retries))
    fabric, _ = _run_reader(opts, (), env, timeout, at)
    return fabric


def sample_live(
    env: dict[str, str] | None = None,
    *,
    timeout: float = 120,
    at: LocalPort | None = None,
    rate: int | None = None,
    window: float | None = None,
) -> tuple[Fabric, str]:
    """Nodes, ports and links (no tables), and the PMA counters of every linked port as the
    reader's ibqos.counters/1 JSON text (manager/readback/src/pma.h), in one process. `rate`
    bounds the MADs per second (the reader's default, 40000, when None); `window` (s) reads
    each port's per-SL data counters again that long after the first answer (None, 0: not)."""
    opts = (("-R", rate), ("-W", window or None))
    return _run_reader(opts, ("-T",), env, timeout, at, counters=True)


def _run_reader(
    opts: tuple[tuple[str, object], ...],
    flags: tuple[str, ...],
    env: dict[str, str] | None,
    timeout: float,
    at: LocalPort | None,
    counters: bool = False,
) -> tuple[Fabric, str]:
    cmd: list[str] = [str(reader_path()), *flags, *(at.diag_args() if at else ())]
    for flag, value in opts:
        if value is not None:
            cmd += [flag, str(value)]
    _check_ibsim(env)
    # umad2sim leaves a fake sysfs tree (sys-<pid>/) in the client's working directory.
    try:
        with tempfile.TemporaryDirectory(prefix="ibqos-readback-") as cwd:
            if counters:
                cmd += ["-c", str(Path(cwd) / "counters.json")]
            cp = run_command(cmd, env=env, timeout=timeout, check=False, cwd=cwd)
            text = (Path(cwd) / "counters.json").read_text() if counters and cp.returncode == 0 else ""
    except ProcessError as e:
        raise ExternalError(f"live read-back failed: {e} (is the fabric answering?)") from e
    if cp.returncode != 0:
        raise ExternalError(f"live read-back failed: {_reader_error(cp.stderr, cp.returncode)}")
    try:
        fabric = Fabric.from_json(cp.stdout)
    except (ValueError, KeyError, TypeError) as e:
        raise ExternalError(f"live read-back: ibqos-readback wrote an unusable model: {e}") from e
    where = (env or os.environ).get("IBSIM_SOCKNAME")
    fabric.source = f"live:ibsim:{where}" if where else f"live:{at.ca}:{at.port}" if at else "live:umad:"
    fabric.pad_lfts()
    return fabric, text


def ibsim_listening(sock: str) -> bool | None:
    """Whether an ibsim listens on IBSIM_SOCKNAME `sock` (its control socket is bound, which
    it does after building the fabric); None when the kernel's socket table is unreadable."""
    try:
        table = Path("/proc/net/unix").read_text(errors="replace")
    except OSError:
        return None
    # abstract names show as @name; ibsim's carry a trailing NUL, shown as a second @
    return any(t.rstrip("@") == f"@{sock}:ctl" for t in table.split())


def _check_ibsim(env: dict[str, str] | None) -> None:
    """Under umad2sim a client of a missing ibsim blocks forever: check the socket first."""
    environ: Mapping[str, str] = os.environ if env is None else env
    sock = environ.get("IBSIM_SOCKNAME")
    if not sock or "umad2sim" not in environ.get("LD_PRELOAD", ""):
        return
    if ibsim_listening(sock) is False:
        raise ExternalError(
            f"live read-back failed: no ibsim listens on IBSIM_SOCKNAME={sock} (fabric not up, or ibsim died)"
        )


def _reader_error(stderr: str, rc: int) -> str:
    """The reader's own one-line error; umad2sim's chatter (ibwarn:) is not the cause."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    own = [ln.removeprefix("ibqos-readback: ") for ln in lines if ln.startswith("ibqos-readback: ")]
    if own:
        return own[-1]
    if lines:
        return lines[-1].strip()
    return f"ibqos-readback exited with {rc}"
