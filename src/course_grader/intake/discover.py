"""Find the submissions in a folder, without trusting anything in it.

Accepted layouts (docs/grading.md)::

    SUBMISSIONS/alice/ex01_capture_boundary.ipynb      one folder per student
    SUBMISSIONS/alice__ex01_capture_boundary.ipynb     flat: student, two underscores, exercise

Every entry is examined with ``lstat`` (symbolic links are never followed) before
anything else. Something *named like a submission* (``*.ipynb``) that is not a
regular file (a folder, a symlink, a FIFO, a socket, a device) becomes a
``Candidate`` with a rejection reason, as does a file whose student or exercise
cannot be told from its path. Nothing here raises for a bad entry: an entry that
cannot even be listed becomes a rejection too.

Duplicates (two candidates for the same student and exercise) are resolved by
:func:`choose`, from properties of the files only (never from the order in which
they were graded), so ``--jobs`` and a resume cannot change which one counts.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")   # \Z: "$" would let "ada\n" through
STUDENT_ID_RULE = "ASCII letters, digits, '.', '_', '-'; at most 64, starting with a letter or digit"
# Letters of other scripts that look like Latin ones (Cyrillic and Greek confusables): an id typed
# with one of them looks right and is refused, so the message says so and the suggestion is Latin.
LOOKALIKES_FROM = "аеорсухіјѕһԁԛԝАВЕКМНОРСТХІЈЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧον"
LOOKALIKES_TO = "aeopcyxijshdqwABEKMHOPCTXIJSABEZHIKMNOPTYXov"
LOOKALIKES = str.maketrans({**dict(zip(LOOKALIKES_FROM, LOOKALIKES_TO, strict=True)),
                            "ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ł": "l",
                            "Ł": "L", "œ": "oe", "Œ": "OE", "þ": "th", "Þ": "Th", "ı": "i"})


def ascii_id(text: str) -> str:
    """An ASCII spelling of ``text`` that ``STUDENT_ID`` accepts, or "" when there is none to offer:
    accents dropped (``José`` -> ``Jose``), look-alike letters of other scripts made Latin, spaces
    and other characters made ``-``."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", text.translate(LOOKALIKES)).translate(LOOKALIKES)
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    plain = re.sub(r"[^A-Za-z0-9._-]+", "-", plain).replace("__", "_").strip("-._")[:64]
    return plain if STUDENT_ID.match(plain) else ""


def student_id_problem(student: str) -> str:
    """"" for an allowed id, else why not, the rule, and an ASCII id to use instead when there is one."""
    if STUDENT_ID.fullmatch(student):
        return ""
    import unicodedata

    shown = repr(student[:40]) + ("..." if len(student) > 40 else "")
    bad = next((ch for ch in student if not re.match(r"[A-Za-z0-9._-]", ch)), None)
    if bad is None:
        why = "too long" if len(student) > 64 else "it must start with a letter or digit"
    else:
        name = unicodedata.name(bad, "")
        looks = " (it looks like a Latin letter, but is not one)" if bad in LOOKALIKES_FROM else ""
        why = f"{bad!r} (U+{ord(bad):04X}{' ' + name if name else ''}) is not allowed{looks}"
    suggestion = ascii_id(student)
    hint = f"; use an ASCII id such as {suggestion!r}" if suggestion and suggestion != student else ""
    return f"student id {shown} is not allowed: {why}. Ids are {STUDENT_ID_RULE}{hint}"


EXERCISE_ID = re.compile(r"^ex\d\d$")
EXERCISE_PREFIX = re.compile(r"^(ex\d\d)(?![0-9])")
SKIPPED_DIRS = {".ipynb_checkpoints", "__MACOSX", ".git"}
MAX_ENTRIES = 100_000    # a folder with more entries than this is not a class's submissions
MAX_DEPTH = 8            # folders below the submissions folder that are searched; deeper ones are reported


@dataclass(frozen=True)
class Candidate:
    rel: str                  # path relative to the submissions folder, '/'-separated (for reports only)
    path: Path                # the path as found (never resolved through symlinks)
    student: str | None       # validated student id, or None
    exercise: str | None      # "exNN" from the file name, or None
    reason: str = ""          # non-empty: rejected before reading, and why
    mtime_ns: int = 0
    size: int = 0

    @property
    def ok(self) -> bool:
        return not self.reason

    def label(self) -> str:
        return f"{self.student or '?'}/{self.exercise or '?'} ({self.rel})"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def exercise_of(file_name: str) -> str | None:
    """``"exNN"`` from a notebook's file name (after any ``STUDENT__``), or None: how the grader
    recognises the exercise."""
    m = EXERCISE_PREFIX.match(file_name)
    return m.group(1) if m else None


def attribute(parts: list[str]) -> tuple[str | None, str | None, str]:
    """``(student, exercise, problem)`` from the path parts below the submissions folder
    (``["alice", "ex01_x.ipynb"]`` or ``["alice__ex01_x.ipynb"]``); ``problem`` is "" when both are known."""
    name = parts[-1]
    if len(parts) == 2:
        student, file_part = parts[0], name
    elif len(parts) == 1 and "__" in name:
        student, file_part = name.split("__", 1)
    elif len(parts) == 1:
        return None, None, "cannot tell the student: use STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb"
    else:
        return None, None, "too deep: use STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb"
    exercise = exercise_of(file_part)
    if problem := student_id_problem(student):
        return None, exercise, problem
    if exercise is None:
        return student, None, "the file name does not start with an exercise id (exNN_...)"
    return student, exercise, ""


def discover(root: Path) -> tuple[list[Candidate], list[str]]:
    """``(candidates, problems)``: every submission-like entry under ``root``, sorted by path.

    Every entry is accounted for: a notebook at any depth is a candidate (one deeper than
    ``STUDENT/exNN.ipynb`` carries attribute's "too deep" reason, so it is listed as unattributed);
    ``problems`` names every other entry that is not graded (folders that could not be read or lie
    more than ``MAX_DEPTH`` down, links, files that are no notebook): reported, never fatal."""
    root = Path(root)
    found: list[Candidate] = []
    problems: list[str] = []

    def walk(folder: Path, parts: list[str]) -> None:
        try:
            with os.scandir(folder) as it:
                entries = []
                for n, entry in enumerate(it):
                    if n >= MAX_ENTRIES:
                        problems.append(f"{'/'.join(parts) or '.'}: more than {MAX_ENTRIES} entries; "
                                        "the rest are ignored")
                        break
                    entries.append(entry)
        except OSError as exc:
            problems.append(f"{'/'.join(parts) or '.'}: cannot list this folder ({exc.strerror or exc})")
            return
        for entry in sorted(entries, key=lambda e: e.name):
            name = entry.name
            if name in SKIPPED_DIRS:
                continue
            sub = parts + [name]
            rel = "/".join(sub)
            if name.startswith("."):
                if name.endswith(".ipynb"):  # a hidden notebook is reported, never silently dropped
                    student, exercise, _ = attribute(parts + [name.lstrip(".")])  # attributed as if visible
                    try:
                        st = entry.stat(follow_symlinks=False)
                        when, size = st.st_mtime_ns, st.st_size
                    except OSError:
                        when, size = 0, 0
                    found.append(Candidate(rel, Path(entry.path), student, exercise,
                                           "the file name starts with '.' (a hidden file); rename it without "
                                           "the leading '.' to have it graded", when, size))
                continue
            try:
                st = entry.stat(follow_symlinks=False)     # lstat: before anything else
            except OSError as exc:
                if name.endswith(".ipynb"):
                    found.append(Candidate(rel, Path(entry.path), *attribute(sub)[:2],
                                           f"cannot examine the file ({exc.strerror or exc})"))
                continue
            student, exercise, problem = attribute(sub)
            if name.endswith(".ipynb"):
                if not stat.S_ISREG(st.st_mode):
                    reason = f"{_kind(st.st_mode)}, not a regular file"
                else:
                    reason = problem
                found.append(Candidate(rel, Path(entry.path), student, exercise, reason, st.st_mtime_ns, st.st_size))
            elif stat.S_ISDIR(st.st_mode) and len(sub) <= MAX_DEPTH:
                walk(Path(entry.path), sub)   # any depth: a notebook below STUDENT/ is named "too deep", not lost
            elif stat.S_ISDIR(st.st_mode):
                problems.append(f"{rel}: a folder more than {MAX_DEPTH} levels down; not searched")
            elif stat.S_ISLNK(st.st_mode):
                kind = ", not a student folder" if len(sub) == 1 else ""
                problems.append(f"{rel}: a symbolic link{kind}; not followed")
            else:
                problems.append(f"{rel}: not a notebook (.ipynb); not graded")

    try:
        st = os.lstat(root)
    except OSError as exc:
        raise FileNotFoundError(f"{root}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{root} is not a folder")
    walk(root, [])
    found.sort(key=lambda c: c.rel)
    return found, problems


def choose(group: list, loadable) -> tuple[object, list]:
    """``(counted, ignored)`` among candidates for one student and exercise.

    The rule depends only on the files: a candidate that ``loadable(c)`` says can be
    graded beats one that cannot; then the most recently modified wins; then the
    first by path. Works on ``Candidate`` or anything with ``candidate``-like fields
    ``mtime_ns`` and ``rel``."""
    ranked = sorted(group, key=lambda c: (not loadable(c), -c.mtime_ns, c.rel))
    return ranked[0], ranked[1:]
