"""Run a command with the signal dispositions a command typed at a terminal starts with
(`terminal_exec.py [--nohup] ARGV...`; --nohup: SIGHUP ignored, as `nohup` leaves it).

A test that signals ibqos needs this: under `nohup make test &` SIGHUP and SIGINT are ignored,
children inherit that across exec, and ibqos rightly keeps an ignored signal ignored
(interrupt.install). The exec keeps the PID, so the test signals the command itself."""

import os
import signal
import sys

args = sys.argv[1:]
nohup = args[:1] == ["--nohup"]
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_DFL)
if nohup:
    args = args[1:]
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
os.execvp(args[0], args)
