"""The exchange's storage on disk: owned by the service's user, 0700 folders and 0600 files, a hand-in
never overwritten (the same bytes twice are two files), and the store's schema versioned."""

import os
import pwd
import sqlite3
import stat

from conftest import SAMPLES
from course_exchange.store import SCHEMA_VERSION, Store


def test_storage_is_private_and_never_overwritten(hub, make_course, tmp_path):
    course = make_course(students=1)
    student, prof = course.students[0], course.instructors[0]
    data = (SAMPLES / "correct__ex02_diagnose.ipynb").read_bytes()
    me = course.client(student)
    a = me.hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", data)["handin"]
    b = me.hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", data)["handin"]
    assert a["id"] != b["id"] and a["sha256"] == b["sha256"]
    course.client(prof).give_back(course.id, student, {"total": 1.0}, {"index.html": "<p>ok</p>"})
    root = hub.storage
    files = [p for p in root.rglob("*")]
    assert len([p for p in files if p.suffix == ".ipynb" and f"/{course.id}/{student}/" in str(p)]) == 2
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    service_uid = root.stat().st_uid
    if os.geteuid() == 0:               # a hub run as root runs its exchange as its own unprivileged user
        assert hub.service_user and service_uid == pwd.getpwnam(hub.service_user).pw_uid != 0, hub.service_user
        assert _uids(hub.service_pid()) == {service_uid}
    for p in files:
        st = p.lstat()
        assert not stat.S_ISLNK(st.st_mode), p
        assert st.st_uid == service_uid, p
        assert stat.S_IMODE(st.st_mode) == (0o700 if p.is_dir() else 0o600), (p, oct(st.st_mode))
    assert not any(p.name.startswith((".tmp-", ".new-")) for p in files)    # no half-written file left


def test_schema_version_is_stored_and_a_newer_one_is_refused(tmp_path):
    store = Store(tmp_path / "x")
    store.close()
    db = sqlite3.connect(tmp_path / "x" / "exchange.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    try:
        Store(tmp_path / "x")
    except RuntimeError as exc:
        assert "newer" in str(exc)
    else:
        raise AssertionError("a newer schema was opened")
    assert os.stat(tmp_path / "x").st_mode & 0o777 == 0o700


def _uids(pid: int) -> set[int]:
    """The real, effective, saved and file-system uids of process ``pid``."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("Uid:"):
            return {int(x) for x in line.split()[1:]}
    raise AssertionError(f"no Uid line for {pid}")
