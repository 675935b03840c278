"""How many CPU threads torch should use, chosen for the machine's load (stdlib only until applied).

On a CPU the engine runs many small matrix products. When other processes keep
cores busy, torch's default (one thread per core) oversubscribes: its threads
wait on each other at every barrier while the others hold a core, and the packed
token path slows down many times over (``make bench --full``'s ``threads_scaling``
section measures it idle and with a core kept busy). So the default is
"the cores nobody else is using, at least one":

* cores: the CPUs this process may run on (``os.sched_getaffinity``), capped by
  a cgroup CPU quota (``/sys/fs/cgroup/cpu.max``) when there is one;
* busy: cores kept busy by *other* processes, measured from ``/proc/stat`` over a
  window, minus this process's own CPU time (so the window can be the seconds
  spent importing torch, at no extra wait); off Linux, the 1-minute load average.

An explicit count (``--threads N``, ``RMLIB_THREADS``, or ``OMP_NUM_THREADS``)
always wins. Measured in ``rmlib.bench`` (``threads`` section).

A float sum split over another number of threads rounds differently, so whatever is kept (a score
table, a trained model) is computed at one recorded count: :func:`pinned_threads` sets it for a
block (a table's shards at the count its layout records, a training run at its configuration's).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time

from ..errors import InputError
from ..options import count_at_least_one

ENV_VAR = "RMLIB_THREADS"


@dataclasses.dataclass(frozen=True)
class CpuSample:
    """A point in time: wall clock, CPU seconds all cores spent busy, and this process's CPU seconds."""

    wall: float
    busy_s: float | None  # None where /proc/stat cannot be read
    own_s: float


def _proc_stat_busy_s() -> float | None:
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    busy = sum(ticks[:8]) - idle  # user nice system idle iowait irq softirq steal (guest is inside user)
    return busy / os.sysconf("SC_CLK_TCK")


def cpu_sample() -> CpuSample:
    t = os.times()
    return CpuSample(time.monotonic(), _proc_stat_busy_s(), t.user + t.system)


def available_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            n = min(n, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def busy_cores(since: CpuSample | None = None, window: float = 0.1) -> float:
    """Cores kept busy by other processes since ``since`` (else over ``window`` seconds from now)."""
    if since is None or since.busy_s is None or time.monotonic() - since.wall < window:
        since = cpu_sample()
        time.sleep(window)
    now = cpu_sample()
    if since.busy_s is None or now.busy_s is None:
        try:
            return max(0.0, os.getloadavg()[0])
        except OSError:
            return 0.0
    elapsed = now.wall - since.wall
    others = (now.busy_s - since.busy_s) - (now.own_s - since.own_s)
    return max(0.0, others / elapsed)


def most_threads(cpus: int | None = None) -> int:
    """The largest thread count accepted: four per CPU this process may use, and at least 64 (each thread
    reserves memory; a count far beyond the CPUs only slows the work down)."""
    return max(64, 4 * (available_cpus() if cpus is None else cpus))


def _explicit(requested) -> int | None:
    for source, value in (("--threads", requested), (ENV_VAR, os.environ.get(ENV_VAR)),
                          ("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS"))):
        if value is None or str(value).strip() in ("", "auto"):
            continue
        n = count_at_least_one(value, source, "a number of threads (or 'auto')")
        if n > most_threads():
            cpus = available_cpus()
            raise InputError(f"{source}={n}: far more threads than the {cpus} CPUs this process may use (at most "
                             f"{most_threads(cpus)} are accepted): give {cpus}, or 'auto'")
        return n
    return None


def choose_threads(requested: int | str | None = None, *, cpus: int | None = None,
                   busy: float | None = None, since: CpuSample | None = None) -> int:
    """The thread count for torch: an explicit request, else the cores other processes leave free.

    ``requested``: an int, ``"auto"`` or None (then ``RMLIB_THREADS``, then
    ``OMP_NUM_THREADS``, then automatic). ``cpus`` and ``busy`` default to
    :func:`available_cpus` and :func:`busy_cores` (``since`` a sample taken earlier).
    """
    explicit = _explicit(requested)
    if explicit is not None:
        return explicit
    cpus = available_cpus() if cpus is None else cpus
    busy = busy_cores(since) if busy is None else busy
    free = cpus - busy
    return max(1, min(cpus, int(free + 0.5)))


def apply_threads(requested: int | str | None = None, *, since: CpuSample | None = None) -> int:
    """Choose (see :func:`choose_threads`) and set torch's intra-op thread count; return it."""
    n = choose_threads(requested, since=since)
    import torch

    torch.set_num_threads(n)
    return n


@contextlib.contextmanager
def pinned_threads(n: int):
    """torch's intra-op thread count set to ``n`` for the block, and put back after it."""
    import torch

    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(n)
    try:
        yield n
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
