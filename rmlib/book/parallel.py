"""Execute the chapters side by side on a multi-core machine (``python -m rmlib.book all -j N``).

Chapters are separate notebooks whose only shared state is on disk, and every
cache there is safe to share between processes: the score store locks each
block of a table and renames finished files into place, the result memo and
the model folders are written to a temporary name and renamed. Two things
still have to come first:

* the models a chapter loads on its default parameters (read from its
  ``parameters`` cell: :func:`rmlib.book.chapters.default_local_models`): an
  embedded model is de-quantized and a trained RM trained by one ``prepare``
  task (:func:`rmlib.engine.models.prepare_checkpoint`), never by two
  chapters at once (that would train the same model twice);
* nothing else: a chapter that reads another's score tables (declared in the
  notebook as ``metadata.rmlib.after``, ``["01"]``) does not wait for it.
  Started beside it, the two score the shared tables together (each block of a
  table is scored once, by whichever process locks it first), so no core
  waits on the longest chapter. ``after`` only orders ready chapters: one whose
  ``after`` chapters have not started yet (they wait on a model still being
  prepared) goes last, as it would score their tables alone for its own,
  sparser request; between chapters of equal weight, one whose ``after``
  chapters are done goes first.

Each task runs in its own process (``python -m rmlib.book prepare SPEC`` or
``... chapter NN --no-build``). A free worker takes a ready task: ``prepare``
tasks first (they unblock chapters), then the chapter that took longest in
the previous build (in a fresh clone: the seconds its metadata expects,
``metadata.rmlib.cost_s``; else chapter order). Each process's torch gets
``cpus // jobs`` threads, so the jobs together never ask for more threads
than there are cores (oversubscribed processes score far fewer tokens per
second: ``make bench``, section ``book_workers``). Two one-thread processes
score about as much as one two-thread process (the same section), and the
Python-bound parts of the chapters (tokenizers, tables, bootstraps, charts,
de-quantizing) run side by side.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable, Mapping

from ..options import count_at_least_one
from ..errors import InputError, TaskError

JOBS_ENV = "RMLIB_BOOK_JOBS"
PREPARE = "prepare:"


@dataclasses.dataclass
class Task:
    """One process of the build: ``argv`` runs it; it starts once every task in ``needs`` has succeeded."""

    name: str
    argv: list[str]
    needs: frozenset[str] = frozenset()
    weight: float = 0.0  # seconds the previous build took (0: unknown); heavier chapters start first
    after: frozenset[str] = frozenset()  # tasks whose tables it reads: a tie-breaker, never a wait


def default_jobs() -> int:
    """``RMLIB_BOOK_JOBS`` when set, else 2 where there are at least two cores (else 1)."""
    from ..engine.threads import available_cpus

    value = os.environ.get(JOBS_ENV, "").strip()
    if value:
        return check_jobs(value, JOBS_ENV)
    return min(2, available_cpus())


def check_jobs(value, source: str = "--jobs") -> int:
    return count_at_least_one(value, source, "the number of chapters to run at once")


def worker_environment(jobs: int) -> dict[str, str]:
    """Thread counts for each worker: ``cpus // jobs`` (at least 1), unless the user set
    ``RMLIB_THREADS`` or ``OMP_NUM_THREADS`` (then theirs)."""
    from ..engine.threads import ENV_VAR, available_cpus

    env = dict(os.environ)
    chosen = env.get(ENV_VAR) or env.get("OMP_NUM_THREADS")
    n = chosen.strip() if chosen and chosen.strip() not in ("", "auto") else str(max(1, available_cpus() // jobs))
    env.update({ENV_VAR: n, "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n})
    return env


def chapter_after(path: pathlib.Path) -> list[str]:
    """The chapters whose score tables a chapter reads (``metadata.rmlib.after``, default ``[]``)."""
    import nbformat

    value = nbformat.read(str(path), as_version=4).metadata.get("rmlib", {}).get("after", [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(f"{path.name}: metadata.rmlib.after must be a list of chapter numbers, not {value!r}")
    return list(value)


def chapter_cost(path: pathlib.Path) -> float:
    """A chapter's expected seconds where no previous build timed it (a fresh clone):
    ``metadata.rmlib.cost_s``, its time in a build on the 2-core machine (``python -m rmlib.book
    timings``), so that the longest chapters start first there too (default 0)."""
    import nbformat

    value = nbformat.read(str(path), as_version=4).metadata.get("rmlib", {}).get("cost_s", 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InputError(f"{path.name}: metadata.rmlib.cost_s must be a number of seconds >= 0, not {value!r}")
    return float(value)


def prepare_tasks(spec: str) -> dict[str, Task]:
    """The prepare task of a model spec, with the de-quantizing of its embedded base when it has one."""
    from ..engine.embedded import EMBEDDED

    tasks = {}
    base = spec.split(":", 1)[1] if spec.startswith("trained:") else None
    if base in EMBEDDED:
        tasks.update(prepare_tasks(base))
    if spec in EMBEDDED or base is not None:
        needs = frozenset({PREPARE + base}) if base in EMBEDDED else frozenset()
        tasks[PREPARE + spec] = Task(PREPARE + spec, [sys.executable, "-m", "rmlib.book", "prepare", spec], needs)
    return tasks


def plan(chapters: Mapping[str, pathlib.Path], weights: Mapping[str, float] | None = None) -> dict[str, Task]:
    """Every chapter's task and the prepare tasks they need (see the module's docstring)."""
    weights = dict(weights or {})
    tasks: dict[str, Task] = {}
    from .chapters import default_local_models

    for key, path in chapters.items():
        needs, after = default_local_models(path), chapter_after(path)
        unknown = [a for a in after if a not in chapters]
        if unknown:
            raise InputError(f"{path.name}: metadata.rmlib.after names chapters {unknown} that do not exist")
        for spec in needs:
            tasks.update(prepare_tasks(spec))
        deps = {PREPARE + s for s in needs if PREPARE + s in tasks}
        tasks[key] = Task(key, [sys.executable, "-m", "rmlib.book", "chapter", key, "--no-build"], frozenset(deps),
                          weights[key] if key in weights else chapter_cost(path), frozenset(after))
    return tasks


def priority(task: Task, done=frozenset(), running=frozenset()) -> tuple:
    """The order ready tasks start in: prepare tasks; then every task but one whose ``after`` tasks have
    none of them started (neither among ``running`` nor ``done``: it would score their shared tables
    alone, for its own, often sparser, request, so it starts only when no other task is ready); then
    heavier first; then (equal weights) those whose ``after`` tasks are all among ``done``; then by name."""
    started = set(done) | set(running)
    return (not task.name.startswith(PREPARE), bool(task.after) and not task.after & started, -task.weight,
            not task.after <= set(done), task.name)


def run_tasks(tasks: Mapping[str, Task], jobs: int, *, env: Mapping[str, str] | None = None,
              log: Callable[[str], None] = print, poll: float = 0.2) -> list[str]:
    """Run ``tasks`` with at most ``jobs`` at once, each after its ``needs``; return the names in the
    order they finished. Heavier tasks start first (:func:`priority`), except one none of whose ``after``
    tasks has started yet; between tasks of equal weight, one whose ``after`` tasks have all finished
    goes first. A task never waits for its ``after`` tasks while a core would idle: it scores the
    tables they share beside them. After a failure no new task starts,
    the running ones finish, and :class:`rmlib.errors.TaskError` names every task that failed or could
    not start."""
    missing = {n: sorted((t.needs | t.after) - set(tasks)) for n, t in tasks.items()
               if (t.needs | t.after) - set(tasks)}
    if missing:
        raise InputError(f"tasks need tasks that are not planned: {missing}")
    pending, running, done, failed = dict(tasks), {}, [], []
    while pending or running:
        while not failed and len(running) < jobs:  # one at a time: a task just started counts as started
            ready = [t for t in pending.values() if t.needs <= set(done)]
            if not ready:
                break
            task = min(ready, key=lambda t: priority(t, done, running))
            del pending[task.name]
            log(f"[rmlib.book] start {task.name}")
            running[task.name] = (task, subprocess.Popen(task.argv, env=dict(env) if env else None),
                                  time.perf_counter())
        if not running:
            break  # what is left waits on a failed task (or, with none failed, on a cycle)
        time.sleep(poll)
        for name, (task, proc, start) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[name]
            seconds = time.perf_counter() - start
            if proc.returncode == 0:
                done.append(name)
                log(f"[rmlib.book] done {name} in {seconds:.0f} s")
            else:
                failed.append(name)
                log(f"[rmlib.book] FAILED {name} (exit {proc.returncode}) after {seconds:.0f} s")
    if failed or pending:
        raise TaskError(failed, sorted(pending))
    return done
