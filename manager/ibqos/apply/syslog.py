"""One line per apply and rollback in the system log (facility daemon, ident `ibqos`).

The socket is /dev/log unless IBQOS_SYSLOG_SOCKET names another (the tests bind a datagram
socket of their own). A host without a syslog socket loses the line, never the apply."""

from __future__ import annotations

import logging
import logging.handlers
import os

SOCKET_ENV = "IBQOS_SYSLOG_SOCKET"


class _Handler(logging.handlers.SysLogHandler):
    failed = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self.failed = True  # no traceback on stderr: the line is lost, the apply goes on


def log_line(message: str) -> bool:
    """Send `message`; True when the socket took it."""
    address = os.environ.get(SOCKET_ENV) or "/dev/log"
    try:
        handler = _Handler(address=address, facility=logging.handlers.SysLogHandler.LOG_DAEMON)
    except OSError:
        return False
    try:
        handler.ident = f"ibqos[{os.getpid()}]: "
        handler.emit(logging.LogRecord("ibqos", logging.INFO, __file__, 0, message, None, None))
        return not handler.failed
    finally:
        handler.close()
