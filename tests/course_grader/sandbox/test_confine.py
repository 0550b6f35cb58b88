"""confine.build_mounts on its own, in a forked child with fresh namespaces (no template needed)."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from course_grader.sandbox import confine
from course_grader.status import Confinement

from sandbox_probes import _confinement, needs_confinement

pytestmark = needs_confinement
MODE = _confinement()


def mounts(hide, reveal, keep):
    """``build_mounts`` as a run of this mode calls it: a leased uid under root; in user namespaces
    the namespace's root (the grader outside) over a read-only tree."""
    userns = MODE is Confinement.USERNS
    return confine.build_mounts(hide, reveal, keep, "", False, 0 if userns else 2_000_999, read_only=userns)


def in_namespaces(setup, probe) -> dict:
    """Run ``setup()`` then ``probe() -> dict`` in a forked child with new namespaces; its JSON reply."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            assert confine.unshare_namespaces(MODE) == []
            notices = setup()
            os.write(w, json.dumps({"notices": notices, **probe()}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def test_a_checkout_under_tmp_stays_reachable_with_its_hidden_parts_covered():
    clone = Path(f"/tmp/clone-{secrets.token_hex(4)}")
    try:
        (clone / "solutions").mkdir(parents=True)
        (clone / "solutions" / "ex01.ipynb").write_text("answers")
        (clone / "src").mkdir()
        (clone / "src" / "helper.py").write_text("x = 1")
        stray = Path(f"/tmp/stray-{secrets.token_hex(4)}")
        stray.write_text("other user's file")
        reply = in_namespaces(
            lambda: mounts([str(clone / "solutions")], {}, [str(clone)]),
            lambda: {"tmp": sorted(os.listdir("/tmp")), "clone": sorted(os.listdir(clone)),
                     "solutions": os.listdir(clone / "solutions"), "src": (clone / "src" / "helper.py").read_text()})
    finally:
        for p in (clone / "solutions" / "ex01.ipynb", clone / "src" / "helper.py"):
            p.unlink()
        for p in (clone / "solutions", clone / "src", clone):
            p.rmdir()
        stray.unlink()
    assert reply["notices"] == []
    assert reply["tmp"] == sorted([clone.name, "work"])          # the stray file is gone
    assert reply["clone"] == ["solutions", "src"] and reply["solutions"] == [] and reply["src"] == "x = 1"


def test_reveal_binds_a_folder_read_only_inside_a_hidden_one(tmp_path):
    package = tmp_path / "pkg"
    (package / "harness").mkdir(parents=True)
    (package / "secret.py").write_text("hidden")
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "probe.py").write_text("seen")

    def probe():
        try:
            open(package / "harness" / "new.py", "w").close()
            writable = True
        except OSError:
            writable = False
        return {"pkg": sorted(os.listdir(package)), "harness": os.listdir(package / "harness"), "writable": writable}

    # tmp_path lives under /tmp, which becomes private: keep it reachable the way a checkout would be
    reply = in_namespaces(lambda: mounts([str(package)], {str(package / "harness"): str(probes)}, [str(tmp_path)]),
                          probe)
    assert reply["pkg"] == ["harness"] and reply["harness"] == ["probe.py"] and reply["writable"] is False
    assert (package / "secret.py").read_text() == "hidden" and not (package / "harness" / "new.py").exists()


def test_a_worktree_checkouts_repository_is_hidden_wherever_it_is(tmp_path):
    """``git worktree``: .git is a file naming a folder in the main clone's .git, which holds every commit."""
    from course_grader.sandbox.policy import git_dirs

    main_git = tmp_path / "main" / ".git"
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    checkout = tmp_path / "wt"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n")
    assert git_dirs(checkout) == [(main_git / "worktrees" / "wt").resolve(), main_git.resolve()]
    (tmp_path / "plain" / ".git").mkdir(parents=True)
    assert git_dirs(tmp_path / "plain") == []
