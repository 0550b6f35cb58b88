"""mountplan.plan_mounts: a run's mount table as data, checked without root or namespaces.

The plan is built from paths and ``FileFacts`` written here by hand (``mounts.survey`` reads the
same facts from the file system; the last tests use it on a folder of their own). What a plan
does when applied is test_confine.py's job (root or user namespaces)."""

from __future__ import annotations

import os
from pathlib import Path

from course_grader.sandbox.mountplan import (
    CACHE_MOUNT,
    CACHE_UPPER,
    CACHE_WORK,
    PRIVATE_DIRS,
    WORKDIR,
    BindBack,
    BindCache,
    Cover,
    FileFacts,
    HideFile,
    HideFolder,
    MakePrivate,
    MakeWorkdir,
    OverlayCache,
    PrivateTmpfs,
    ReadOnlyTree,
    Reveal,
    plan_mounts,
    under,
)
from course_grader.sandbox.mounts import survey
from course_grader.sandbox.notices import Weakening
from course_grader.sandbox.policy import default_hidden

CHECKOUT = "/srv/course"
HARNESS = f"{CHECKOUT}/src/course_grader/harness"
PYTHON = "/usr/lib/python3.11"
RUN_UID = 2_000_999
PRIVATE = [PrivateTmpfs(d) for d in PRIVATE_DIRS]
WRITABLE = (PrivateTmpfs, BindCache, OverlayCache, MakeWorkdir)   # what a run may write, as mounted


def facts(folders=(), files=(), **more) -> FileFacts:
    """Facts of a machine where ``folders`` and ``files`` exist (and the private dirs, as folders)."""
    return FileFacts(present=frozenset([*folders, *files]), folders=frozenset([*folders, *PRIVATE_DIRS]), **more)


def root_run(hide, folders=(), files=(), reveal=None, keep=(CHECKOUT, PYTHON), **changes):
    return plan_mounts(hide, reveal or {}, keep, "", False, RUN_UID, facts=facts(folders, files), **changes)


def test_a_root_run_hides_then_privatizes_in_order():
    hidden = [f"{CHECKOUT}/solutions", f"{CHECKOUT}/src/course_grader", f"{CHECKOUT}/notes.txt"]
    plan = root_run([*hidden, f"{CHECKOUT}/build"], folders=hidden[:2], files=hidden[2:],
                    reveal={HARNESS: "/srv/probes"})
    assert plan.ops == (
        MakePrivate("/"),
        HideFile(f"{CHECKOUT}/notes.txt"),                     # shortest path first: outermost wins
        HideFolder(f"{CHECKOUT}/solutions"),
        HideFolder(f"{CHECKOUT}/src/course_grader", (Reveal(HARNESS, "/srv/probes"),)),
        *PRIVATE,
        MakeWorkdir(WORKDIR, RUN_UID),
    )                                                           # build/ does not exist: nothing to hide
    assert plan.sources() == ["/srv/probes"]


def test_every_instructor_folder_is_hidden():
    """default_hidden is the one list (policy.py); a plan that forgot one of them fails here."""
    instructor = [str(p) for p in default_hidden()]
    plan = root_run(instructor, folders=instructor)
    assert sorted(plan.hidden()) == sorted(instructor)
    for path in instructor:
        assert any(isinstance(op, HideFolder) and op.path == path for op in plan.ops), path


def test_a_path_inside_a_hidden_folder_is_hidden_by_it_and_an_absent_one_is_skipped():
    hide = [f"{CHECKOUT}/tests", f"{CHECKOUT}/tests/samples", "/srv/nowhere"]
    plan = root_run(hide, folders=hide[:2])
    assert plan.hidden() == [f"{CHECKOUT}/tests"]


def test_no_hidden_path_is_ever_mounted_writable_or_bound_back():
    hidden = [f"/tmp/clone/{name}" for name in ("solutions", "tests", ".git")] + ["/home/grader/keys"]
    plan = plan_mounts(hidden, {}, ["/tmp/clone", PYTHON], "/var/cache/course", True, 0, read_only=True,
                       cover=["/home/grader"], facts=facts([*hidden, "/home/grader"]))
    assert sorted(plan.hidden()) == sorted(hidden)
    for op in plan.ops:
        target = getattr(op, "target", getattr(op, "path", ""))
        if isinstance(op, WRITABLE):
            assert not any(under(target, h) for h in hidden), op
        if isinstance(op, BindBack):
            assert target not in hidden and not any(under(target, h) for h in hidden), op


def test_a_checkout_under_tmp_is_bound_back_after_its_hidden_parts_are_covered():
    """The bind back is recursive: made after the hides, it carries them; made before, it would not."""
    clone = "/tmp/clone"
    plan = root_run([f"{clone}/solutions"], folders=[f"{clone}/solutions"], keep=[clone, PYTHON])
    assert plan.ops == (MakePrivate("/"), HideFolder(f"{clone}/solutions"), *PRIVATE, BindBack(clone),
                        MakeWorkdir(WORKDIR, RUN_UID))
    assert plan.sources() == [clone]


def test_a_user_namespace_run_reads_nothing_writable_and_covers_the_graders_home():
    home = "/home/grader"
    checkout = f"{home}/course"
    plan = plan_mounts([f"{checkout}/solutions"], {}, [checkout, f"{home}/course/.venv", PYTHON], "", False, 0,
                       read_only=True, cover=[home, "/"], facts=facts([f"{checkout}/solutions", home]))
    assert plan.ops == (MakePrivate("/"), ReadOnlyTree("/"), HideFolder(f"{checkout}/solutions"), *PRIVATE,
                        Cover(home), BindBack(checkout), MakeWorkdir(WORKDIR, 0))   # "/" is never covered


def test_a_root_runs_python_in_a_folder_it_cannot_traverse_is_covered_and_bound_back():
    pyenv = "/root/.pyenv/versions/3.11.7"
    plan = plan_mounts([], {}, [CHECKOUT, pyenv], "", False, RUN_UID,
                       facts=facts(untraversable=frozenset({"/root"})))
    assert plan.ops == (MakePrivate("/"), *PRIVATE, Cover("/root"), BindBack(pyenv), MakeWorkdir(WORKDIR, RUN_UID))
    # the grader's own uid (user namespaces) needs no such cover
    assert Cover("/root") not in plan_mounts([], {}, [pyenv], "", False, 0,
                                             facts=facts(untraversable=frozenset({"/root"}))).ops


def test_the_compile_cache_is_an_overlay_except_while_warming():
    cache = "/var/cache/course"
    seen = plan_mounts([], {}, [], cache, False, RUN_UID, facts=facts())
    assert seen.ops[-1] == OverlayCache(cache, CACHE_MOUNT, CACHE_UPPER, CACHE_WORK, RUN_UID)
    warming_as_root = plan_mounts([], {}, [], cache, True, RUN_UID, facts=facts())
    assert warming_as_root.ops[-1] == BindCache(cache, CACHE_MOUNT, open_up=True, clear_read_only=False)
    warming_in_userns = plan_mounts([], {}, [], cache, True, 0, read_only=True, facts=facts())
    assert warming_in_userns.ops[-1] == BindCache(cache, CACHE_MOUNT, open_up=False, clear_read_only=True)
    assert seen.sources() == [cache]


def test_a_private_dir_that_is_a_link_or_absent_is_left_alone():
    plan = plan_mounts([], {}, [], "", False, RUN_UID, facts=FileFacts(folders=frozenset({"/tmp", "/var/tmp"}),
                                                                       links=frozenset({"/var/tmp"})))
    assert [op for op in plan.ops if isinstance(op, PrivateTmpfs)] == [PrivateTmpfs("/tmp")]


def test_a_failed_hide_cover_or_private_tmp_is_a_weakening_and_nothing_else_is():
    cache = "/var/cache/course"
    plan = plan_mounts([f"{CHECKOUT}/solutions", f"{CHECKOUT}/key"], {}, ["/root/course"], cache, False,
                       RUN_UID, facts=facts([f"{CHECKOUT}/solutions"], [f"{CHECKOUT}/key"],
                                            untraversable=frozenset({"/root"})))
    weakens = {type(op).__name__: op.weakens for op in plan.ops}
    assert weakens == {"MakePrivate": None, "HideFile": Weakening.NOT_HIDDEN, "HideFolder": Weakening.NOT_HIDDEN,
                       "PrivateTmpfs": Weakening.NOT_PRIVATE, "Cover": Weakening.NOT_COVERED, "BindBack": None,
                       "MakeWorkdir": None, "OverlayCache": None}


def test_the_survey_reads_the_facts_a_plan_needs(tmp_path):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "answers.txt").write_text("42")
    (tmp_path / "linked").symlink_to(tmp_path / "solutions")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    hide = [str(tmp_path / n) for n in ("solutions", "answers.txt", "linked", "dangling", "absent")]
    found = survey(hide, {}, [str(tmp_path)], [], 0)
    assert found.present == frozenset(hide[:4])
    assert found.resolve(hide[2]) == str((tmp_path / "solutions").resolve())
    assert str((tmp_path / "solutions").resolve()) in found.folders
    assert str((tmp_path / "answers.txt").resolve()) not in found.folders
    plan = plan_mounts(hide, {}, [str(tmp_path)], "", False, 0, facts=found)
    real = Path(tmp_path).resolve()
    assert plan.hidden() == sorted([str(real / "gone"), str(real / "solutions"), str(real / "answers.txt")],
                                   key=lambda p: (len(p), p))
    assert os.path.lexists(hide[3]) and not (tmp_path / "gone").exists()
