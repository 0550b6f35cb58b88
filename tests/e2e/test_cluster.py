"""Grading on a Dask cluster (course_grader.pipeline.cluster) against a real LocalCluster of worker processes.

The class is a few bundled samples (tests/samples/submissions) of ex02 (measured with
backend="eager": no inductor compile) and ex06 (no graded test), plus a file the grader
rejects. One local run grades it as the reference, checked against the samples' expected
verdicts. Two real-sandbox runs on the cluster must each end with the local run's gradebook
(``Gradebook.snapshot``: every row but the timings): one while a worker is killed mid-task,
and the run that resumes after its client was killed, in which nothing dies. Tests with a
fake host (pickled by value to the workers) cover the retry-once rule and a worker that
cannot set up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import distributed
import psutil
import pytest

from course_grader import grader_key
from course_grader.errors import GraderError, SandboxFault, WorkerSetupError
from course_grader.pipeline.cluster import DaskExecutor
from course_grader.pipeline.cluster.worker import RunSpec, _host_for, grading_now, runtime
from course_grader.pipeline.grade_class import grade_class
from course_grader.results.gradebook import Gradebook
from course_grader.samples.expectations import check_expectations
from course_grader.status import FaultKind
from course_grader.verdict.context import TestVerdict

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "samples" / "submissions"
CLASS = ["correct__ex02_diagnose", "partial__ex02_diagnose", "unanswered__ex02_diagnose",
         "adv-computed-answer__ex02_diagnose", "correct__ex06_check_understanding",
         "bad-empty__ex01_capture_boundary"]
GRADED = 5            # the rejected file is recorded before any task is sent
WAIT_S = 600          # generous: a 2-core machine shared with other test runs


def copy_class(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in CLASS:
        shutil.copy(SAMPLES / f"{name}.ipynb", folder)
    return folder


def snapshot(report) -> dict:
    with Gradebook(report.gradebook) as book:
        return book.snapshot()


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes, 1 thread each; yields (address, client)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, \
            distributed.Client(lc, set_as_default=False) as client:
        yield lc.scheduler_address, client


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The class graded locally, --jobs 2: the reference every cluster run must equal."""
    base = tmp_path_factory.mktemp("local")
    report = grade_class(copy_class(base / "class"), base / "out", jobs=2, progress=False)
    assert report.ok and len(report.graded) == GRADED + 1 and not report.retried
    expected = json.loads((SAMPLES / "expected.json").read_text())
    with Gradebook(report.gradebook) as book:
        assert check_expectations(book, {f"{n}.ipynb": expected[f"{n}.ipynb"] for n in CLASS}) == []
    return snapshot(report)


def worker_pids(client) -> dict[str, int]:
    """Worker address -> pid, as the scheduler knows them."""
    return client.run_on_scheduler(lambda dask_scheduler: {a: ws.pid for a, ws in dask_scheduler.workers.items()})


def assert_reports_written(report) -> None:
    """The run wrote a CSV row per submission and the feedback index, as a local run does."""
    assert (report.out_dir / "grades.csv").read_text().count("\n") == len(CLASS) + 1
    assert (report.out_dir / "feedback" / "index.html").is_file()


def test_a_worker_killed_mid_task_loses_nothing_and_grades_nothing_twice(tmp_path, cluster, local):
    address, client = cluster
    box = {}

    def grade():
        box["report"] = grade_class(copy_class(tmp_path / "class"), tmp_path / "out", progress=False,
                                    executor=DaskExecutor(address))

    runner = threading.Thread(target=grade)
    runner.start()
    deadline = time.monotonic() + WAIT_S
    victim = None
    while victim is None and runner.is_alive() and time.monotonic() < deadline:
        busy = client.run(grading_now)
        victim = next((addr for addr, rels in busy.items() if rels), None)
        time.sleep(0.1)
    assert victim is not None, "no worker was ever seen grading"
    doomed = psutil.Process(worker_pids(client)[victim])
    tree = [doomed, *doomed.children(recursive=True)]     # its sandbox template and runs
    os.kill(doomed.pid, signal.SIGKILL)
    suspicious = {}
    while not suspicious and runner.is_alive() and time.monotonic() < deadline:  # its task died with it
        suspicious = client.run_on_scheduler(lambda dask_scheduler: {
            k: ts.suspicious for k, ts in dask_scheduler.tasks.items() if ts.suspicious})
        time.sleep(0.1)
    runner.join(WAIT_S)
    report = box["report"]
    assert suspicious, "the killed worker held no task"
    assert report.ok and not report.retried               # a lost worker is not a try of the submission
    assert len(report.graded) == GRADED + 1
    assert snapshot(report) == local                      # each row once, equal to local grading
    assert_reports_written(report)
    gone = psutil.wait_procs(tree, timeout=30)[1]
    assert gone == [], f"processes of the killed worker still alive: {gone}"


def recorded(gradebook: Path, mode: str = "ro") -> int:
    """Attempts in the gradebook, rejected files aside. ``mode="rw"`` opens it as the resumed run does
    (a read-write connection to a WAL database whose writer was killed), so both count the same rows."""
    try:
        with sqlite3.connect(f"file:{gradebook}?mode={mode}", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM attempts WHERE status != 'rejected'").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_killed_client_resumes_from_its_gradebook(tmp_path, cluster, local):
    address, _ = cluster
    subs, out = copy_class(tmp_path / "class"), tmp_path / "out"
    cmd = [sys.executable, "-m", "course_tools.cli", "grade", "run", str(subs), "--out", str(out),
           "--scheduler", address, "--no-progress"]
    client_proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT_S
    while recorded(out / "gradebook.sqlite") < 1 and client_proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    client_proc.send_signal(signal.SIGKILL)
    client_proc.wait()
    done = recorded(out / "gradebook.sqlite", mode="rw")
    assert 1 <= done < GRADED, f"the client was not killed mid-run ({done} of {GRADED} recorded)"

    # the resumed run is one in which nothing dies: it alone grades the rest, and the class equals local grading
    report = grade_class(subs, out, progress=False, executor=DaskExecutor(address))
    assert report.ok and len(report.graded) == GRADED - done and report.skipped == done + 1 and not report.retried
    assert snapshot(report) == local
    assert_reports_written(report)


def test_without_the_option_grading_never_imports_dask(tmp_path):
    subs = tmp_path / "class"
    subs.mkdir()
    for name in ("correct__ex06_check_understanding", "bad-empty__ex01_capture_boundary"):
        shutil.copy(SAMPLES / f"{name}.ipynb", subs)
    probe = ("import json, sys\nfrom course_grader.ui.grade import main\n"
             f"rc = main(['run', {str(subs)!r}, '--out', {str(tmp_path / 'out')!r}, '--no-progress'])\n"
             "print(json.dumps([rc, sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed') "
             "or m.startswith('course_grader.pipeline.cluster'))]))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=WAIT_S)
    rc, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert rc == 0 and loaded == [], done.stderr[-2000:]


# ---------------------------------------------------------------- fake hosts, pickled to the workers

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class FlakyHost:
    """Built on the worker. ``measure`` fails with ``kind`` outside warm-up, ``fail_first`` times per process."""

    calls = 0

    def __init__(self, kind: str, fail_first: int):
        self.kind, self.fail_first, self.warm = FaultKind(kind), fail_first, False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def notebook_kernel(self):
        raise SandboxFault(FaultKind.GRADER, "no kernels in this test")

    def warming(self):
        from contextlib import nullcontext

        return nullcontext()

    def measure(self, harness, entry, payload):
        FlakyHost.calls += 1
        if FlakyHost.calls <= self.fail_first:
            raise SandboxFault(self.kind, "your code used 60 s of CPU in the measurement")
        return {"ok": True}


def measuring_verdicts(ex):
    def grade(ctx):
        try:
            ok, msg = ctx.measure("probe", {})["ok"], ""
        except SandboxFault as fault:
            ok, msg = False, str(fault)
        return [TestVerdict(t.course_id, ok, msg) for t in ex.tests]

    return grade, ex.id


def test_on_the_cluster_a_timeout_is_rerun_once_alone(tmp_path, submission, cluster):
    address, _ = cluster
    for s in ("ida", "jon", "kai"):
        submission(s, "ex01")
    report = grade_class(tmp_path / "subs", tmp_path / "out", progress=False, warm=False,
                         executor=DaskExecutor(address), verdict_for=measuring_verdicts,
                         host_factory=lambda *a: FlakyHost("cpu-time", 10**6))
    assert sorted(report.retried) == sorted(p.name for p in (tmp_path / "subs").iterdir())   # each once
    with Gradebook(report.gradebook) as book:
        rows = book.current()
    assert len(rows) == 3 and all(r["auto_score"] == 0 and "second run, alone" in r["reason"] for r in rows)


def test_a_worker_that_cannot_set_up_stops_the_run(tmp_path, submission, cluster):
    address, _ = cluster
    submission("lou", "ex01")

    def no_sandbox(*a):
        raise OSError("no user namespaces here")

    with pytest.raises(GraderError, match="a worker cannot grade: the sandbox did not start"):
        grade_class(tmp_path / "subs", tmp_path / "out", progress=False, warm=False,
                    executor=DaskExecutor(address), host_factory=no_sandbox, verdict_for=measuring_verdicts)
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as book:
        assert book.current() == []


@pytest.mark.parametrize("key, env, problem", [
    ("2+0000000000000000", None, "other grader code"),
    (None, "Python 3.11.0, torch 2.13.0", "install the pinned requirements"),
])
def test_a_worker_with_other_code_or_other_torch_refuses_to_grade(key, env, problem):
    spec = RunSpec(("/nonexistent",), None, False, False, key or grader_key(), env or runtime()).with_key()
    with pytest.raises(WorkerSetupError, match=problem):
        _host_for(spec)


def test_a_worker_that_cannot_confine_refuses_unless_unconfined(monkeypatch):
    from course_grader.sandbox import confine

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr("course_grader.sandbox.policy._USERNS_REFUSAL", [confine.USERNS_SETTINGS])  # userns off
    monkeypatch.setattr("course_grader.pipeline.cluster.worker._HOSTS", {})     # this process's hosts, restored after
    spec = RunSpec(("/nonexistent",), None, False, False, grader_key(), runtime())
    with pytest.raises(WorkerSetupError, match="not root"):
        _host_for(spec.with_key())
    monkeypatch.setattr("course_grader.pipeline.cluster.worker._HostState", lambda spec: "a host")
    unconfined = RunSpec(*[getattr(spec, f) for f in ("hide", "limits", "warm", "progress", "grader_key", "runtime",
                                                       "host_factory", "verdict_for")], unconfined=True).with_key()
    assert _host_for(unconfined) == "a host"


@pytest.mark.parametrize("argv", [["--cluster", "local:0"], ["--cluster", "ssh:2"], ["--cluster", "local:two"]])
def test_cluster_option_usage_errors_exit_2(tmp_path, argv, capsys):
    from course_grader.ui.grade import main

    with pytest.raises(SystemExit) as stopped:
        main(["run", str(tmp_path), "--out", str(tmp_path / "out"), *argv])
    assert stopped.value.code == 2 and "--cluster takes local:N" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:      # one place to grade, not two
        main(["run", str(tmp_path), "--scheduler", "tcp://127.0.0.1:8786", "--cluster", "local:2"])
    assert stopped.value.code == 2


def test_a_cluster_left_without_workers_stops_the_run_instead_of_waiting_forever(tmp_path, submission, monkeypatch):
    """Every worker gone and none joining: Dask keeps the tasks queued, so a run that only waited for them
    never ended (a test run hung here for 35 minutes once both of its workers had died). The run stops with
    the grader's error, saying how many submissions are left, and records nothing it did not grade."""
    from course_grader.pipeline.cluster import client as cluster_client

    monkeypatch.setattr(cluster_client, "NO_WORKERS_S", 2.0)
    monkeypatch.setattr(cluster_client, "WATCH_S", 0.2)
    for s in ("mia", "ned"):
        submission(s, "ex01")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as lc:
        with pytest.raises(GraderError, match=r"no worker for 2\.0 s: 2 submission\(s\) not graded"):
            grade_class(tmp_path / "subs", tmp_path / "out", progress=False, warm=False,
                        executor=DaskExecutor(lc.scheduler_address), verdict_for=measuring_verdicts,
                        host_factory=lambda *a: FlakyHost("cpu-time", 0))
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as book:
        assert book.current() == []
