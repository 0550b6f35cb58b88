"""The compile cache store: a run starts from the last identical run's warm-up, never from anything else."""

from __future__ import annotations

import os
import threading
import time

from course_grader.pipeline import cache_store


def test_key_changes_with_the_grader_and_any_exercise():
    base = cache_store.cache_key({"ex01": "a", "ex02": "b"}, "g1")
    assert base == cache_store.cache_key({"ex02": "b", "ex01": "a"}, "g1")
    assert base != cache_store.cache_key({"ex01": "a", "ex02": "c"}, "g1")
    assert base != cache_store.cache_key({"ex01": "a", "ex02": "b"}, "g2")
    assert base != cache_store.cache_key({"ex01": "a"}, "g1")


def test_an_entry_holds_a_compile_cache_and_a_record_and_nothing_else_is_reused(tmp_path):
    store, run = tmp_path / "store", tmp_path / "run"
    run.mkdir()
    entry = cache_store.Entry("k1", store)
    first = cache_store.new_folder(run)
    assert entry.record() is None and not entry.copy_into(first) and list(first.iterdir()) == []
    (first / "fxgraph").mkdir()
    (first / "fxgraph" / "entry").write_text("compiled")
    with entry.lock(exclusive=True):
        entry.publish(first, {"ex01": "sha1"}, [["h", "e", "{}", '{"n": 1}']])
    assert os.stat(store).st_mode & 0o777 == 0o700 and os.stat(store / "k1").st_mode & 0o777 == 0o700
    assert os.stat(store / "k1" / cache_store.RECORD).st_mode & 0o777 == 0o600
    second = cache_store.new_folder(run)
    assert entry.copy_into(second) and (second / "fxgraph" / "entry").read_text() == "compiled"
    assert not (second / cache_store.RECORD).exists()      # the replies never reach a kernel's folder
    assert entry.record()["exercises"] == {"ex01": "sha1"} and second != first
    other = cache_store.new_folder(run)                     # another torch, grader or exercise set
    assert not cache_store.Entry("k2", store).copy_into(other) and list(other.iterdir()) == []
    (store / "k1" / cache_store.RECORD).write_text("{not json")
    assert entry.record() is None                            # a damaged record means: warm up again


def test_publishing_replaces_the_key_and_keeps_few_keys_but_never_one_in_use(tmp_path):
    store, run = tmp_path / "store", tmp_path / "run"
    run.mkdir()
    for n in range(cache_store.KEEP + 2):
        folder = cache_store.new_folder(run)
        (folder / "v").write_text(str(n))
        target = cache_store.Entry(f"k{n}", store).publish(folder, {}, [])
        os.utime(target, (n, n))        # publication order, whatever the clock's resolution
    kept = sorted(p.name for p in store.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert kept == [f"k{n}" for n in range(2, cache_store.KEEP + 2)]     # the newest KEEP
    folder = cache_store.new_folder(run)
    (folder / "v").write_text("new")
    with cache_store.Entry("k2", store).lock(exclusive=False):   # a run is reading the oldest now
        cache_store.Entry("new", store).publish(folder, {}, [])
        assert (store / "k2").is_dir()   # its turn to go, but in use: kept for now
    cache_store.Entry("new", store).publish(folder, {}, [])
    assert not (store / "k2").exists() and (store / "k3").is_dir()
    assert (store / "new" / cache_store.CACHE / "v").read_text() == "new"
    assert [p for p in store.iterdir() if p.is_dir() and p.name.startswith(".")] == []


def _probing_verdicts(ex):
    """Every test passes; each grading asks the host one question (a reference measurement)."""
    from course_grader.verdict.context import TestVerdict

    def grade(ctx):
        ctx.measure("probe", {"exercise": ex.id})
        return [TestVerdict(t.course_id, True, "") for t in ex.tests]

    return grade, ex.id


class _StoreHost:
    """A fake host whose warm-up writes a cache entry and whose measurements are counted."""

    def __init__(self, fake_host, cache, log, pause=0.0):
        self.inner, self.cache, self.log, self.pause = fake_host({(None, None): None}), cache, log, pause

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def warming(self):
        self.log.append("warm")
        time.sleep(self.pause)   # long enough for a second grader to ask for the same entry meanwhile
        (self.cache / "warmed-entry").write_text("x")
        return self.inner.warming()

    def notebook_kernel(self):
        self.log.append(("kernel", self.inner.warm, sorted(p.name for p in self.cache.iterdir())))
        return self.inner.notebook_kernel()

    def measure(self, harness, entry, payload):
        self.log.append(("measure", self.inner.warm))
        return {"ok": True}


def test_grade_class_reuses_an_identical_runs_warm_up_without_grading_the_model_answers(
        tmp_path, submission, grade_fake, fake_host, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "no-inductor-cache"))  # nothing to seed from
    log: list = []
    submission("ann", "ex02")
    factory = lambda hide, cache, limits: _StoreHost(fake_host, cache, log)  # noqa: E731
    first = grade_fake(tmp_path / "subs", tmp_path / "out1", host_factory=factory, verdict_for=_probing_verdicts,
                       store=tmp_path / "store")
    assert first.ok and not first.cache_reused and log.count("warm") == 1
    # the model answers ask the question while warming (their verdicts only: no notebook kernel); the student's
    # equal question is answered from the run's cache, and the student's feedback kernel sees the warmed cache
    assert log == ["warm", ("measure", True), ("kernel", False, ["warmed-entry"])]
    assert first.cached_replies == 1
    stored = cache_store.Entry(next(p.name for p in (tmp_path / "store").iterdir() if p.name[0] != "."),
                               tmp_path / "store")
    assert stored.record()["exercises"] and stored.record()["replies"]
    log.clear()
    second = grade_fake(tmp_path / "subs", tmp_path / "out2", host_factory=factory, verdict_for=_probing_verdicts,
                       store=tmp_path / "store")
    assert second.ok and second.cache_reused and "warm" not in log
    # the student's kernel sees the stored cache; the student's question is answered by the stored reply
    assert log == [("kernel", False, ["warmed-entry"])] and second.cached_replies == 1
    assert scores(first) == scores(second) == [("ann", "graded", exercises_points(second))]


def scores(report):
    from course_grader.results.gradebook import Gradebook

    with Gradebook(report.gradebook) as book:
        return [(r["student"], r["status"], r["auto_score"]) for r in book.current()]


def exercises_points(report):
    from course_grader.results.gradebook import Gradebook

    with Gradebook(report.gradebook) as book:
        return book.current()[0]["auto_score"]


def test_two_graders_of_one_key_warm_up_once(tmp_path, exercises, fake_host, monkeypatch):
    from course_grader.config import GradeOptions
    from course_grader.pipeline.session import GradingSession

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "no-inductor-cache"))  # nothing to seed from
    store = tmp_path / "store"
    log: list = []
    entry = cache_store.Entry("k", store)
    results = []

    def grader(n):
        folder = tmp_path / f"run{n}"
        folder.mkdir()
        host = _StoreHost(fake_host, folder, log, pause=1.0)
        session = GradingSession(host, GradeOptions(progress=False, verdict_for=_probing_verdicts),
                                 compile_cache=folder, entry=entry)
        reused = session.warm_up([exercises["ex02"]])
        results.append((reused, sorted(p.name for p in folder.iterdir()), len(session.cache.replies)))

    threads = [threading.Thread(target=grader, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert log.count("warm") == 1
    assert sorted(results) == [(False, ["warmed-entry"], 1), (True, ["warmed-entry"], 1)]


def test_a_new_compile_cache_starts_from_the_machines_compiled_kernels_never_its_graphs(tmp_path, monkeypatch):
    machine = tmp_path / "inductor"
    for part in ("cache/ab", "fxgraph/cd", "aotautograd/ef", "locks"):
        (machine / part).mkdir(parents=True)
    (machine / "cache" / "ab" / "kernel.so").write_bytes(b"compiled")
    (machine / "fxgraph" / "cd" / "graph").write_bytes(b"a compiled graph")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(machine))
    folder = tmp_path / "run"
    folder.mkdir()
    cache_store.seed_compiled_kernels(folder)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == ["cache", "cache/ab",
                                                                                    "cache/ab/kernel.so"]
    assert (folder / "cache" / "ab" / "kernel.so").stat().st_mode & 0o666 == 0o666   # any run's uid may read it


def test_an_unusable_store_is_reported_and_the_run_warms_up_without_it(tmp_path, submission, grade_fake, fake_host):
    """A store the grader cannot create (here under a file; for real: not root, in a checkout root
    owns) is a problem line, not a crash: the run warms up in its own folder and grades."""
    (tmp_path / "a-file").write_text("")
    log: list = []
    submission("ann", "ex02")
    report = grade_fake(tmp_path / "subs", tmp_path / "out", verdict_for=_probing_verdicts,
                        host_factory=lambda hide, cache, limits: _StoreHost(fake_host, cache, log),
                        store=tmp_path / "a-file" / "store")
    assert report.ok and len(report.graded) == 1 and not report.cache_reused and log.count("warm") == 1
    assert report.problems == [f"warm-up store {tmp_path / 'a-file' / 'store'}: cannot use it (Not a directory); "
                               "this run warms up without it"]


KILLED_GRADER = r"""
import sys, time
from contextlib import contextmanager
sys.path.insert(0, sys.argv[3])
from grading_fixtures import FakeHost, stub_verdicts
from course_grader.pipeline.grade_class import grade_class

class Stuck:
    def run_cell(self, source, cell_id=""):
        print("grading", flush=True)
        time.sleep(600)

class Host(FakeHost):
    @contextmanager
    def notebook_kernel(self):
        yield Stuck()

grade_class(sys.argv[1], sys.argv[2], host_factory=lambda *a: Host(), verdict_for=stub_verdicts, progress=False)
"""


def test_a_resumed_run_sweeps_the_compile_cache_of_a_killed_grader_and_no_live_one(tmp_path, submission,
                                                                                  grade_fake):
    import signal
    import subprocess
    import sys
    from pathlib import Path

    submission("kim", "ex01")
    out = tmp_path / "out"
    script = tmp_path / "killed.py"
    script.write_text(KILLED_GRADER)
    grader = subprocess.Popen([sys.executable, str(script), str(tmp_path / "subs"), str(out),
                               str(Path(__file__).resolve().parents[2])], stdout=subprocess.PIPE, text=True)
    try:
        assert grader.stdout.readline().strip() == "grading"      # its compile cache exists now
        left = [p for p in out.iterdir() if p.name.startswith(cache_store.RUN_FOLDER)]
        assert len(left) == 1 and f"-{grader.pid}-" in left[0].name
        live = subprocess.Popen([sys.executable, "-c",
                                 "import sys, time; from course_grader.pipeline import cache_store; "
                                 "print(cache_store.new_folder(sys.argv[1]), flush=True); time.sleep(600)", str(out)],
                                stdout=subprocess.PIPE, text=True)
        try:
            live_folder = Path(live.stdout.readline().strip())
            elsewhere = out / f"{cache_store.RUN_FOLDER}00000000-{grader.pid}-1-abc"   # another machine's
            elsewhere.mkdir()
            older = out / f"{cache_store.RUN_FOLDER}x1y2z3"                             # an older grader's name
            older.mkdir()
            grader.send_signal(signal.SIGKILL)
            grader.wait()
            assert left[0].is_dir()                                  # kill -9: no cleanup ran
            grade_fake(tmp_path / "subs", out)                       # the resumed run
            assert not left[0].exists()
            assert live_folder.is_dir() and elsewhere.is_dir() and older.is_dir()
            assert sorted(p.name for p in out.iterdir() if p.name.startswith(cache_store.RUN_FOLDER)) == sorted(
                [live_folder.name, elsewhere.name, older.name])      # and its own went at its end
        finally:
            live.kill()
            live.wait()
    finally:
        grader.kill()
        grader.wait()
