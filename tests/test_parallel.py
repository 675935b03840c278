"""The parallel book build (rmlib.book.parallel): task order, concurrency, failures, the chapters' plan."""

import os
import pathlib
import sys

import pytest

from rmlib.book import parallel
from rmlib.book.__main__ import main
from rmlib.book.chapters import find_chapters
from rmlib.errors import RmlibError, TaskError


def _task(tmp_path, name, *, needs=(), code="", weight=0.0, after=()):
    """A process that records its start and end in ``tmp_path/log`` and counts the tasks running beside it."""
    script = (
        "import os, pathlib, sys, time\n"
        f"d = pathlib.Path({str(tmp_path)!r}); name = {name!r}\n"
        "(d / f'running-{name}').touch()\n"
        "with open(d / 'log', 'a') as f: f.write(f'start {name} {len(list(d.glob(\"running-*\")))}\\n')\n"
        f"{code}\n"
        "time.sleep(0.4)\n"
        "(d / f'running-{name}').unlink()\n"
        "with open(d / 'log', 'a') as f: f.write(f'end {name}\\n')\n"
    )
    return parallel.Task(name, [sys.executable, "-c", script], frozenset(needs), weight, frozenset(after))


def _log(tmp_path):
    return [line.split() for line in (tmp_path / "log").read_text().splitlines()]


def test_tasks_start_after_their_needs_and_never_more_than_jobs_at_once(tmp_path):
    tasks = {t.name: t for t in [
        _task(tmp_path, "prep"), _task(tmp_path, "a", needs={"prep"}, weight=1),
        _task(tmp_path, "b", needs={"prep"}, weight=5), _task(tmp_path, "c", weight=0),
        _task(tmp_path, "d", needs={"a", "b"}),
    ]}
    lines = []
    done = parallel.run_tasks(tasks, 2, log=lines.append, poll=0.02)
    assert sorted(done) == sorted(tasks)
    log = _log(tmp_path)
    order = [name for kind, name, *_ in log if kind == "start"]
    ended = {name: i for i, (kind, name, *_) in enumerate(log) if kind == "end"}
    started = {name: i for i, (kind, name, *_) in enumerate(log) if kind == "start"}
    for t in tasks.values():
        assert all(ended[n] < started[t.name] for n in t.needs), (t.name, log)
    assert max(int(rest[0]) for kind, _, *rest in log if kind == "start") <= 2
    launched = [line.split()[-1] for line in lines if " start " in line]
    assert launched.index("b") < launched.index("a")  # the heavier chapter is launched first
    assert sorted(order) == sorted(launched)


def test_a_chapter_that_reads_a_running_ones_tables_starts_beside_it(tmp_path):
    """``after`` never makes a core wait: "late" (after "long", heavier than "free") starts beside "long";
    between equal weights the one whose ``after`` tasks are done goes first."""
    slow = "time.sleep(1.5)"
    tasks = {t.name: t for t in [_task(tmp_path, "long", code=slow, weight=9),
                                 _task(tmp_path, "late", after={"long"}, weight=5), _task(tmp_path, "free")]}
    parallel.run_tasks(tasks, 2, log=lambda _: None, poll=0.02)
    at = {(kind, name): i for i, (kind, name, *_) in enumerate(_log(tmp_path))}
    assert at[("start", "late")] < at[("start", "free")] and at[("start", "late")] < at[("end", "long")]
    (tmp_path / "log").unlink()
    tasks = {t.name: t for t in [_task(tmp_path, "long", code=slow, weight=9),
                                 _task(tmp_path, "a-late", after={"long"}), _task(tmp_path, "free")]}
    parallel.run_tasks(tasks, 2, log=lambda _: None, poll=0.02)
    at = {(kind, name): i for i, (kind, name, *_) in enumerate(_log(tmp_path))}
    assert at[("start", "free")] < at[("start", "a-late")]  # equal weights: the one whose tables are done
    with pytest.raises(ValueError, match="not planned"):
        parallel.run_tasks({"a": _task(tmp_path, "a", after={"ghost"})}, 2, log=lambda _: None)


def test_a_fresh_clone_starts_the_chapters_its_metadata_expects_longest_first(tmp_path):
    """With no previous build, a chapter's weight is its ``metadata.rmlib.cost_s``; a previous build's own
    time wins; a bad value is refused naming the notebook."""
    import nbformat

    paths = {}
    for key, cost in (("01", 30), ("02", 900), ("03", None)):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]})]
        nb.metadata["rmlib"] = {} if cost is None else {"cost_s": cost}
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        paths[key] = tmp_path / f"{key}_x.ipynb"
        nbformat.write(nb, str(paths[key]))
    tasks = parallel.plan(paths)
    assert [t.name for t in sorted(tasks.values(), key=parallel.priority)] == ["02", "01", "03"]
    assert parallel.plan(paths, {"01": 5000.0})["01"].weight == 5000.0
    nb = nbformat.read(str(paths["03"]), as_version=4)
    nb.metadata["rmlib"] = {"cost_s": "long"}
    nbformat.write(nb, str(paths["03"]))
    with pytest.raises(ValueError, match="03_x.ipynb: metadata.rmlib.cost_s"):
        parallel.plan(paths)


def test_one_job_runs_one_task_at_a_time(tmp_path):
    tasks = {n: _task(tmp_path, n) for n in "xyz"}
    parallel.run_tasks(tasks, 1, log=lambda _: None, poll=0.02)
    assert {int(rest[0]) for kind, _, *rest in _log(tmp_path) if kind == "start"} == {1}


def test_a_failure_starts_nothing_new_and_names_what_did_not_run(tmp_path):
    tasks = {t.name: t for t in [
        _task(tmp_path, "bad", code="sys.exit(3)", weight=9), _task(tmp_path, "after", needs={"bad"}),
        _task(tmp_path, "other"),
    ]}
    lines = []
    with pytest.raises(TaskError) as err:
        parallel.run_tasks(tasks, 1, log=lines.append, poll=0.02)
    assert err.value.failed == ["bad"] and err.value.not_started == ["after", "other"]
    assert isinstance(err.value, RmlibError)  # the CLI reports it as one line, as every rmlib error
    assert "failed: bad" in str(err.value) and any("FAILED bad (exit 3)" in line for line in lines)
    assert [name for kind, name, *_ in _log(tmp_path) if kind == "start"] == ["bad"]


def test_a_need_that_is_not_planned_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="not planned"):
        parallel.run_tasks({"a": _task(tmp_path, "a", needs={"ghost"})}, 2, log=lambda _: None)


def test_the_book_plan_prepares_each_model_once_before_the_chapters_that_load_it():
    chapters = find_chapters()
    tasks = parallel.plan(chapters, {"05": 100.0})
    assert set(chapters) <= set(tasks)
    for spec in ("default", "gemma-3-270m", "trained:default", "trained:gemma-3-270m"):
        assert tasks[parallel.PREPARE + spec].argv[-2:] == ["prepare", spec]
    assert tasks[parallel.PREPARE + "trained:default"].needs == {parallel.PREPARE + "default"}
    assert {parallel.PREPARE + "trained:default", parallel.PREPARE + "trained:gemma-3-270m"} <= tasks["03"].needs
    assert "01" in tasks["03"].after and "01" not in tasks["03"].needs  # read back, or scored together
    assert tasks["05"].weight == 100.0 and tasks["05"].argv[-3:] == ["chapter", "05", "--no-build"]
    first = sorted(tasks.values(), key=parallel.priority)[0]
    assert first.name.startswith(parallel.PREPARE)  # models first: they unblock the chapters


def test_the_models_a_chapter_loads_are_read_from_its_parameters(tmp_path):
    import nbformat

    from rmlib.book.chapters import default_local_models

    chapters = find_chapters()
    assert default_local_models(chapters["01"]) == ["trained:default", "trained:gemma-3-270m", "default"]  # lm too
    assert default_local_models(chapters["07"]) == ["trained:default", "trained:gemma-3-270m"]  # from `bases`
    assert default_local_models(chapters["99"]) == []
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        'models = ["gemma-3-270m", "tiny:llama-lm", "org/hub-rm"]\nreference = "default"\n'
        'bases = ["default"]\nprompt = "default"\nsearch_model = "trained:gemma-3-270m"',
        metadata={"tags": ["parameters"]})]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "01_x.ipynb"
    nbformat.write(nb, str(path))
    # hub and tiny models are not prepared; a prompt that reads "default" is not a model
    assert default_local_models(path) == ["gemma-3-270m", "default", "trained:default", "trained:gemma-3-270m"]


def test_after_must_name_existing_chapters(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["rmlib"] = {"after": "01"}
    path = tmp_path / "01_x.ipynb"
    nbformat.write(nb, str(path))
    with pytest.raises(ValueError, match="after must be a list"):
        parallel.chapter_after(path)
    nb.metadata["rmlib"] = {"after": ["07"]}
    nbformat.write(nb, str(path))
    with pytest.raises(ValueError, match=r"chapters \['07'\] that do not exist"):
        parallel.plan({"01": path})


def test_workers_share_the_cores(monkeypatch):
    monkeypatch.delenv("RMLIB_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("rmlib.engine.threads.available_cpus", lambda: 8)
    env = parallel.worker_environment(2)
    assert env["OMP_NUM_THREADS"] == env["RMLIB_THREADS"] == "4"
    assert parallel.worker_environment(16)["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("RMLIB_THREADS", "3")
    assert parallel.worker_environment(2)["OMP_NUM_THREADS"] == "3"  # the user's choice wins
    monkeypatch.setenv(parallel.JOBS_ENV, "3")
    assert parallel.default_jobs() == 3
    monkeypatch.setenv(parallel.JOBS_ENV, "zero")
    with pytest.raises(ValueError, match="RMLIB_BOOK_JOBS='zero'"):
        parallel.default_jobs()


def test_prepare_command(capsys):
    assert main(["prepare", "default"]) == 0
    folder = capsys.readouterr().out.strip().split(": ", 1)[1]
    assert os.path.isfile(os.path.join(folder, "model.safetensors"))
    assert main(["prepare", "tiny:llama-lm"]) == 1
    assert "only embedded models and trained: RMs are prepared" in capsys.readouterr().err
    assert main(["prepare"]) == 2
    assert main(["all", "-j", "0"]) == 1
    assert "--jobs='0'" in capsys.readouterr().err


def test_a_chapter_trains_the_trained_rms_its_parameters_name_first(monkeypatch, capsys):
    """run_chapter (and ``prepare``) ask the training layer for each trained: RM; the engine only loads."""
    from rmlib.book import execute
    from rmlib.training import trained

    asked = []
    monkeypatch.setattr(trained, "ensure_trained", lambda spec, progress=True: asked.append(spec) or pathlib.Path(spec))
    execute.train_named_models({"models": ["trained:default", "default"], "bases": ["gemma-3-270m"], "lm": "default",
                                "prompt": "trained:not-a-model-parameter"})
    assert asked == ["trained:default", "trained:gemma-3-270m"]
    assert main(["prepare", "trained:tiny:llama-lm"]) == 0
    assert asked[-1] == "trained:tiny:llama-lm" and "trained:tiny:llama-lm: trained:tiny:llama-lm" in capsys.readouterr().out


def test_a_chapter_whose_tables_nobody_scores_yet_goes_after_the_other_ready_ones(tmp_path):
    """"reader" (after "first", the heaviest) is ready before "first" is (which needs "gate"): it waits
    behind "first" once "first" is ready, though heavier; with nothing else ready it still starts."""
    tasks = {t.name: t for t in [_task(tmp_path, "gate", code="time.sleep(0.2)"),
                                 _task(tmp_path, "other", code="time.sleep(1.5)", weight=1),
                                 _task(tmp_path, "first", needs={"gate"}),
                                 _task(tmp_path, "reader", after={"first"}, weight=9)]}
    parallel.run_tasks(tasks, 2, log=lambda _: None, poll=0.02)
    at = {(kind, name): i for i, (kind, name, *_) in enumerate(_log(tmp_path))}
    assert at[("start", "first")] < at[("start", "reader")]
    assert parallel.priority(tasks["reader"], running={"first"}) < parallel.priority(tasks["other"])
    assert parallel.priority(tasks["reader"]) > parallel.priority(tasks["first"])  # weight 9, yet after it
    (tmp_path / "log").unlink()
    alone = {t.name: t for t in [_task(tmp_path, "reader", after={"first"}, weight=9),
                                 _task(tmp_path, "first", needs={"gate"}), _task(tmp_path, "gate")]}
    parallel.run_tasks(alone, 2, log=lambda _: None, poll=0.02)  # nothing else ready: no core idles
    at = {(kind, name): i for i, (kind, name, *_) in enumerate(_log(tmp_path))}
    assert at[("start", "reader")] < at[("end", "gate")]
