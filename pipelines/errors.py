"""How a command fails: one kind per cause, one exit code per kind, one line on stderr.

``auditlake`` prints ``auditlake: <kind>: <one line>`` and exits with the kind's code (README, "Exit
codes"). Each module's own error class derives from one kind, so ``cli.main`` is the only place
that prints one. Anything else is an internal error: its one line, and the path of the log holding
its traceback (Spark's JVM stack trace and plan included).
"""

from __future__ import annotations

EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2  # argparse's own code for a command line it cannot read
EXIT_INPUT = 3
EXIT_ENVIRONMENT = 4
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE
EXIT_BUSY = 75  # sysexits.h EX_TEMPFAIL: a scheduler retries later
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C


class AuditlakeError(Exception):
    """A failure the message explains (what went wrong, and what to do)."""

    kind = "error"
    exit_code = EXIT_CHECK_FAILED
    # whether the error log (its traceback) can tell more than the one line: not where the line says all
    logged = True


class UsageError(AuditlakeError):
    """The command line asks for something that cannot run (nothing was started)."""

    kind = "usage error"
    exit_code = EXIT_USAGE
    logged = False


class ConfigError(AuditlakeError, ValueError):
    """A configuration problem; the message (one line) names the key and the file or environment
    variable its value came from (nothing was started)."""

    kind = "configuration error"
    exit_code = EXIT_USAGE
    logged = False


class InputError(AuditlakeError):
    """What the command works on is missing or unusable: a person not in the lake, a layer not
    built yet, a file the export needs (nothing was changed)."""

    kind = "input error"
    exit_code = EXIT_INPUT


class ExternalError(AuditlakeError):
    """Something outside the lake failed: a database, Tableau, a webhook receiver, the cluster's
    daemons, the machine. The next run may well succeed."""

    kind = "environment error"
    exit_code = EXIT_ENVIRONMENT


class CheckFailed(AuditlakeError):
    """The command ran and a check said no: a quality gate, a dbt test, the reconciliation."""

    kind = "check failed"
    exit_code = EXIT_CHECK_FAILED


class BusyError(AuditlakeError):
    """Another refresh holds the lake; try again later."""

    kind = "busy"
    exit_code = EXIT_BUSY
    logged = False


INTERNAL = "internal error"

_SPARK_TAILS = ("\nJVM stacktrace:", "\n\tat ", "\n== ")  # what Spark appends after its own message


def one_line(what: object) -> str:
    """An error (or any text) as one line: Spark's JVM stack trace and plan cut off, then the first
    non-blank line (with the second when the first is short: Spark's message is often two), its
    whitespace collapsed."""
    text = str(what).strip()
    if not text and isinstance(what, BaseException):
        text = type(what).__name__
    for marker in _SPARK_TAILS:
        text = text.split(marker)[0]
    lines = [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[0] if len(lines) == 1 or len(lines[0]) > 80 else f"{lines[0]} {lines[1]}"


def kind_of(exc: BaseException) -> tuple[str, int]:
    """-> (the kind printed, the exit code) of a failure."""
    if isinstance(exc, AuditlakeError):
        return exc.kind, exc.exit_code
    return INTERNAL, EXIT_INTERNAL
