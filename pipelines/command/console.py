"""What a command says as it goes: one line on stdout, flushed at once (a scheduler's log or a pipe
shows each line when it happens). The product's commands and the tooling's print through ``log``."""

from __future__ import annotations


def log(msg: str) -> None:
    print(msg, flush=True)
