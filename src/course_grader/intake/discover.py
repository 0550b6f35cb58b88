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
from dataclasses import dataclass, field
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


HAND_IN_NAMES = "STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb"   # what a hand-in's path must be


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
# Folders that never hold a hand-in, whatever is in them: (what a notebook found there is, what the
# folder is). Their notebooks are named one by one with the first; their other files, and a hidden
# folder's, are counted on one line (a .git holds thousands)
IGNORED_FOLDERS = {
    ".ipynb_checkpoints": ("an editor checkpoint copy (Jupyter's autosave), not a hand-in",
                           "Jupyter's checkpoint folder"),
    "__MACOSX": ("a macOS archive's resource fork, not a hand-in", "a macOS archive's resource-fork folder"),
    ".git": ("part of git's own records, not a hand-in", "git's own folder"),
}
HIDDEN_FOLDER = "a hidden folder"
# What `course collect` writes beside the hand-ins it copies (course_exchange): known, so not reported
COLLECT_RECORD = ".collected.json"
MAX_ENTRIES = 100_000    # a folder with more entries than this is not a class's submissions
MAX_DEPTH = 8            # folders below the submissions folder that are searched; deeper ones are reported
NAMES_SHOWN = 5          # file names an ignored folder's line quotes before "and N more"


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
        return None, None, f"cannot tell the student: use {HAND_IN_NAMES}"
    else:
        return None, None, f"too deep: use {HAND_IN_NAMES}"
    exercise = exercise_of(file_part)
    if problem := student_id_problem(student):
        return None, exercise, problem
    if exercise is None:
        return student, None, "the file name does not start with an exercise id (exNN_...)"
    return student, exercise, ""


@dataclass
class _Quiet:
    """A hidden or ignored folder: its files that are not candidates, reported on one line."""

    rel: str
    what: str                            # the folder, as a reader knows it
    notebook_reason: str = ""            # an ignored folder: why its notebooks are not candidates either
    files: list[str] = field(default_factory=list)

    def line(self) -> str:
        shown = ", ".join(self.files[:NAMES_SHOWN]) + (
            f" and {len(self.files) - NAMES_SHOWN} more" if len(self.files) > NAMES_SHOWN else "")
        count = "1 file that is not a notebook" if len(self.files) == 1 else \
            f"{len(self.files)} files that are not notebooks"
        return f"{self.rel}: {count}, in {self.what}; not graded ({shown})"


def discover(root: Path, skip: tuple[Path, ...] = ()) -> tuple[list[Candidate], list[str]]:
    """``(candidates, problems)``: every submission-like entry under ``root``, sorted by path.

    ``skip``: paths under ``root`` that are not hand-ins and are passed over unread and unsaid (the
    results folder and gradebook of the run itself, when they lie inside the folder it grades).

    Every file is accounted for, at any depth: a notebook is a candidate (one deeper than
    ``STUDENT/exNN.ipynb`` carries attribute's "too deep" reason, one that is hidden or lies in a
    hidden folder a reason saying so, so it is rejected or listed as unattributed); ``problems``
    names every other entry that is not graded, with its reason (folders that could not be read or
    lie more than ``MAX_DEPTH`` down, links, files that are no notebook, the notebooks of an
    :data:`IGNORED_FOLDERS` folder such as an editor checkpoint copy; a hidden or ignored folder's
    other files on one line): reported, never fatal. Only ``course collect``'s own record
    (:data:`COLLECT_RECORD`, at the top) is known and left unsaid."""
    root = Path(root)
    skipped = {os.path.realpath(p) for p in skip}
    found: list[Candidate] = []
    problems: list[str] = []
    quiet: list[_Quiet] = []

    def listing(folder: Path, parts: list[str]) -> list[os.DirEntry] | None:
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
            return None
        return sorted(entries, key=lambda e: e.name)

    def walk(folder: Path, parts: list[str], inside: _Quiet | None) -> None:
        entries = listing(folder, parts)
        for entry in entries or ():
            name = entry.name
            sub = parts + [name]
            rel = "/".join(sub)
            notebook = name.endswith(".ipynb")
            if skipped and os.path.realpath(entry.path) in skipped:
                continue                         # this run's own results: never read as a hand-in
            try:
                st = entry.stat(follow_symlinks=False)     # lstat: before anything else
            except OSError as exc:
                if notebook and not (inside and inside.notebook_reason):
                    found.append(Candidate(rel, Path(entry.path), *attribute(sub)[:2],
                                           f"cannot examine the file ({exc.strerror or exc})"))
                else:
                    problems.append(f"{rel}: cannot examine it ({exc.strerror or exc}); not graded")
                continue
            if stat.S_ISDIR(st.st_mode) and not notebook:
                if len(sub) > MAX_DEPTH:
                    problems.append(f"{rel}: a folder more than {MAX_DEPTH} levels down; not searched")
                    continue
                below = inside
                if name in IGNORED_FOLDERS and not (inside and inside.notebook_reason):
                    below = _Quiet(rel, IGNORED_FOLDERS[name][1], IGNORED_FOLDERS[name][0])
                elif name.startswith(".") and inside is None:
                    below = _Quiet(rel, HIDDEN_FOLDER)
                if below is not inside:
                    quiet.append(below)
                walk(Path(entry.path), sub, below)   # any depth: nothing below is lost
                continue
            if inside is not None and (inside.notebook_reason or not notebook):
                if notebook:
                    problems.append(f"{rel}: {inside.notebook_reason}; not graded")
                else:
                    inside.files.append("/".join(sub[len(inside.rel.split("/")):]))
                continue
            if not notebook:
                if rel == COLLECT_RECORD and stat.S_ISREG(st.st_mode):
                    continue                     # the course's own record of a collect, not a student's file
                if stat.S_ISLNK(st.st_mode):
                    kind = ", not a student folder" if len(sub) == 1 else ""
                    problems.append(f"{rel}: a symbolic link{kind}; not followed")
                elif name.startswith("."):
                    problems.append(f"{rel}: a hidden file, not a notebook (.ipynb); not graded")
                else:
                    problems.append(f"{rel}: not a notebook (.ipynb); not graded")
                continue
            if inside is not None:       # a notebook in a hidden folder: attributed as if visible, and rejected
                student, exercise, _ = attribute([part.lstrip(".") for part in sub])
                reason = (f"it lies in a hidden folder ({inside.rel}); move it out of the hidden folder to "
                          "have it graded")
            elif name.startswith("."):   # a hidden notebook: likewise
                student, exercise, _ = attribute(parts + [name.lstrip(".")])
                reason = ("the file name starts with '.' (a hidden file); rename it without the leading '.' to have "
                          "it graded")
            else:
                student, exercise, reason = attribute(sub)
                if not stat.S_ISREG(st.st_mode):
                    reason = f"{_kind(st.st_mode)}, not a regular file"
            found.append(Candidate(rel, Path(entry.path), student, exercise, reason, st.st_mtime_ns, st.st_size))

    try:
        st = os.lstat(root)
    except OSError as exc:
        raise FileNotFoundError(f"{root}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{root} is not a folder")
    walk(root, [], None)
    problems += [q.line() for q in quiet if q.files]
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
