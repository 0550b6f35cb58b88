"""The tests' ordinary user leaves nothing behind: the user, its home and its ACL entries go when the run ends."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from ordinary_user import SESSION_ENV, USER, _acl_entries, can_make_users  # noqa: E402

pytestmark = pytest.mark.skipif(bool(can_make_users()), reason=can_make_users() or "ok")

MAKE = ("import sys; sys.path.insert(0, {tests!r}); from ordinary_user import ordinary_user; "
        "u = ordinary_user(); print(u.pw_name, u.pw_uid, u.pw_dir, flush=True); {then}")


def _entries_for(uid: int) -> list[Path]:
    folders = reversed(Path(os.path.realpath(sys.executable)).parents)
    return [f for f in folders if any(tag == USER and who == uid for tag, _, who in _acl_entries(f))]


def _run(then: str = "") -> tuple[str, int, Path, subprocess.Popen]:
    env = {k: v for k, v in os.environ.items() if k != SESSION_ENV}   # a process of its own, not of this run
    proc = subprocess.Popen([sys.executable, "-c", MAKE.format(tests=str(Path(__file__).parent), then=then)],
                            stdout=subprocess.PIPE, text=True, env=env)
    name, uid, home = proc.stdout.readline().split()
    return name, int(uid), Path(home), proc


def test_the_user_and_its_acl_entries_are_removed_when_the_process_ends():
    name, uid, home, proc = _run()
    assert proc.wait(timeout=120) == 0
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    assert not home.exists()
    assert not _entries_for(uid), f"ACL entries for uid {uid} left on the way to {sys.executable}"


def test_a_killed_run_is_cleaned_up_by_the_next_one():
    name, uid, home, proc = _run("import time; time.sleep(600)")
    try:
        assert pwd.getpwnam(name).pw_uid == uid
        if os.path.realpath(sys.executable).startswith("/root/"):
            assert _entries_for(uid), "the user was given its way through /root"
    finally:
        proc.kill()     # no atexit: the user stays until the next run notices its process is gone
        proc.wait(timeout=60)
    assert pwd.getpwnam(name)
    _, _, _, second = _run()
    assert second.wait(timeout=120) == 0
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    assert not _entries_for(uid) and not home.exists()
