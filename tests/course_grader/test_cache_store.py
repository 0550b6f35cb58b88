"""The compile cache store: a run starts from the last identical run's warm-up, never from anything else."""

from __future__ import annotations

import os

from course_grader import cache_store


def test_key_changes_with_the_grader_and_any_exercise():
    base = cache_store.cache_key({"ex01": "a", "ex02": "b"}, "g1")
    assert base == cache_store.cache_key({"ex02": "b", "ex01": "a"}, "g1")
    assert base != cache_store.cache_key({"ex01": "a", "ex02": "c"}, "g1")
    assert base != cache_store.cache_key({"ex01": "a", "ex02": "b"}, "g2")
    assert base != cache_store.cache_key({"ex01": "a"}, "g1")


def test_a_run_starts_empty_then_from_what_the_last_run_published(tmp_path):
    store, run = tmp_path / "store", tmp_path / "run"
    run.mkdir()
    first, reused = cache_store.prepare(run, "k1", store)
    assert not reused and list(first.iterdir()) == []
    (first / "fxgraph").mkdir()
    (first / "fxgraph" / "entry").write_text("compiled")
    cache_store.publish(first, "k1", store)
    assert os.stat(store).st_mode & 0o777 == 0o700 and os.stat(store / "k1").st_mode & 0o777 == 0o700
    second, reused = cache_store.prepare(run, "k1", store)
    assert reused and (second / "fxgraph" / "entry").read_text() == "compiled"
    assert second != first
    other, reused = cache_store.prepare(run, "k2", store)     # another torch, grader or exercise set
    assert not reused and list(other.iterdir()) == []


def test_publishing_replaces_the_key_and_keeps_few_keys(tmp_path):
    store, run = tmp_path / "store", tmp_path / "run"
    run.mkdir()
    for n in range(cache_store.KEEP + 2):
        folder, _ = cache_store.prepare(run, f"k{n}", store)
        (folder / "v").write_text(str(n))
        target = cache_store.publish(folder, f"k{n}", store)
        os.utime(target, (n, n))        # publication order, whatever the clock's resolution
    folder, _ = cache_store.prepare(run, "k0", store)
    (folder / "v").write_text("new")
    cache_store.publish(folder, f"k{cache_store.KEEP + 1}", store)
    kept = sorted(p.name for p in store.iterdir() if not p.name.startswith("."))
    assert len(kept) == cache_store.KEEP and f"k{cache_store.KEEP + 1}" in kept and "k0" not in kept
    assert (store / f"k{cache_store.KEEP + 1}" / "v").read_text() == "new"
    assert [p for p in store.iterdir() if p.name.startswith(".")] == []


def test_grade_class_warms_from_the_store_and_publishes_before_students_run(tmp_path, submission, grade_fake,
                                                                        fake_host, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setattr(cache_store, "STORE", store)
    seen = []

    class Host(fake_host):
        def __init__(self, cache):
            super().__init__()
            self.cache = cache

        def notebook_kernel(self):
            # what this run's cache holds, and what the store holds, each time a kernel starts
            seen.append((self.warm, sorted(p.name for p in self.cache.iterdir()),
                         sorted(p.name for p in store.glob("*/*"))))
            if self.warm:
                (self.cache / "warmed-entry").write_text("x")
            return super().notebook_kernel()

    submission("ann", "ex02")
    factory = lambda hide, cache, limits: Host(cache)  # noqa: E731
    first = grade_fake(tmp_path / "subs", tmp_path / "out1", host_factory=factory)
    assert first.ok and not first.cache_reused
    assert seen[0] == (True, [], [])                                   # cold: nothing stored yet
    assert seen[-1] == (False, ["warmed-entry"], ["warmed-entry"])     # published before the student's kernel
    seen.clear()
    second = grade_fake(tmp_path / "subs", tmp_path / "out2", host_factory=factory)
    assert second.ok and second.cache_reused and seen[0][:2] == (True, ["warmed-entry"])
