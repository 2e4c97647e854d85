"""How fast this machine runs right now, read in a few seconds with the standard library only.

The machines this project is built and benched on are shared: the same work has taken far longer
on one day than on the next (docs/performance.md, "What is measured, and how"). A duration says
little without the machine's speed beside it, so CI's log (`.ci/run`, before and after the suite)
and every bench section's header carry this reading. Two figures, because a shared machine can slow
one and not the other:

- compute: a loop of additions (one core, in its caches);
- memory: reads at scattered places of a list too large for the caches, as a JVM's object graph and
  a query's hash tables are read.

    python3 -m auditlake_devtools.machine_speed
"""

from __future__ import annotations

import functools
import os
import platform
import time

STEPS = 3_000_000  # compute: additions (a fraction of a second)
CELLS = 4_000_000  # memory: a list of this many ints (~150 MB with the ints: past any cache) ...
READS = 500_000  # ... read at this many scattered places
REPEATS = 3  # the best of these: the machine's speed, not a neighbour's burst


def _best(work) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def compute_seconds() -> float:
    def work():
        total = 0
        for step in range(STEPS):
            total += step

    return _best(work)


def memory_seconds() -> float:
    cells = list(range(CELLS))
    # scattered, the same places every time: multiplicative hashing of 0..READS (Knuth's constant)
    places = [(i * 2654435761) % CELLS for i in range(READS)]

    def work():
        total = 0
        for place in places:
            total += cells[place]

    return _best(work)


@functools.cache  # one reading per process: a bench's sections share it
def describe() -> str:
    """The machine and its reading, as the benches' headers and CI's log give it."""
    return (
        f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}; "
        f"speed reading: compute {compute_seconds():.3f} s, memory {memory_seconds():.3f} s "
        "(`python3 -m auditlake_devtools.machine_speed`; lower is faster)"
    )


if __name__ == "__main__":
    print(f"machine: {describe()}", flush=True)
