"""Stand-in for ib_send_bw / ib_send_lat that replays recorded stdout (tests only).

Invoked as `python perftest_replay.py TOOL ARGS...` from a wrapper named TOOL on PATH. It
behaves like perftest on the wire where the runner can see it: the server binds its -p TCP
port (SO_REUSEADDR, like perftest) and waits for one client; a client that finds no server
fails with perftest's "Couldn't connect to HOST:PORT". The "measurement" lasts -D seconds
(bandwidth) or a fraction of a second (latency); then the recorded output is printed.

Environment:
  IBQOS_REPLAY_DIR   fixtures: TOOL_slN_ROLE.txt, else TOOL_ROLE.txt; for ib_send_lat while
                     any replayed ib_send_bw runs, TOOL_slN_ROLE_loaded.txt is preferred
  IBQOS_REPLAY_LOG   JSON-lines event log (listen/connect/start/end with wall-clock times)
  IBQOS_REPLAY_HANG  comma list of TOOL:SL:ROLE that hang instead of finishing
Lines starting with "#: " in fixtures are provenance notes and are not printed.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

VALUE_OPTS = {"-d", "-i", "-S", "-p", "-m", "-s", "-D", "-n", "-x", "-q"}


def main(tool: str, argv: list[str]) -> int:
    opts, positional, i = {}, [], 0
    while i < len(argv):
        a = argv[i]
        if a in VALUE_OPTS:
            opts[a] = argv[i + 1]
            i += 2
        else:
            if not a.startswith("-"):
                positional.append(a)
            i += 1
    role = "client" if positional else "server"
    sl, port = int(opts.get("-S", 0)), int(opts.get("-p", 18515))
    ev = Events(tool, role, sl, port)

    if role == "server":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            print(f"Couldn't listen to port {port}", file=sys.stderr)
            return 1
        s.listen(1)
        ev("listen")
        conn, _ = s.accept()
        s.close()
    else:
        try:
            conn = socket.create_connection((positional[-1], port), timeout=5)
        except OSError:
            print(f"Couldn't connect to {positional[-1]}:{port}", file=sys.stderr)
            return 1
        ev("connect")
    loaded = tool == "ib_send_lat" and ev.bandwidth_flows_running()
    ev("start")
    if f"{tool}:{sl}:{role}" in os.environ.get("IBQOS_REPLAY_HANG", "").split(","):
        ev("hang")
        while True:
            time.sleep(3600)
    time.sleep(float(opts["-D"]) if "-D" in opts else 0.2)
    conn.close()
    sys.stdout.write(fixture(tool, sl, role, loaded))
    sys.stdout.flush()
    ev("end")
    return 0


def fixture(tool: str, sl: int, role: str, loaded: bool) -> str:
    d = Path(os.environ["IBQOS_REPLAY_DIR"])
    names = ([f"{tool}_sl{sl}_{role}_loaded.txt"] if loaded else []) + [
        f"{tool}_sl{sl}_{role}.txt",
        f"{tool}_{role}.txt",
    ]
    path = next(d / n for n in names if (d / n).exists())
    return "".join(ln for ln in path.read_text().splitlines(True) if not ln.startswith("#: "))


class Events:
    def __init__(self, tool, role, sl, port):
        self.base = {"tool": tool, "role": role, "sl": sl, "port": port, "pid": os.getpid()}
        self.path = os.environ.get("IBQOS_REPLAY_LOG")

    def __call__(self, event: str) -> None:
        if self.path:
            line = json.dumps({**self.base, "event": event, "t": time.time()}) + "\n"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    def bandwidth_flows_running(self) -> bool:
        if not self.path or not os.path.exists(self.path):
            return False
        started, ended = set(), set()
        for ln in Path(self.path).read_text().splitlines():
            e = json.loads(ln)
            if e["tool"] == "ib_send_bw" and e["role"] == "client":
                (started if e["event"] == "start" else ended if e["event"] == "end" else set()).add(e["pid"])
        return bool(started - ended)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
