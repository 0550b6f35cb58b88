"""``course``: the course's command line.

  course run                  the main job: run the lessons, release exercises, grade samples, build the site
  course execute NB...        re-execute notebooks and store their normalized outputs in place
  course normalize NB...      store notebook metadata as JupyterLab writes it (outputs untouched)
  course workspace            copy new lessons and exercises into work/, never overwriting your changes
  course lab [ARGS...]        JupyterLab on work/, opened at lesson 01 (ARGS go to jupyter lab)
  course release [--check]    regenerate exercises/ from solutions/
  course publish DEST         the student edition: a git repository without solutions or hidden tests
  course hub-env [PREFIX]     the hub's shared environment for students' servers, from the edition (no solutions)
  course seal [--check]       close solutions/, tests/, build/ and .git of a shared checkout to all but their owner
  course grade SUB [...]      grade a folder of hand-ins, import reviews, hand back (course grade --help)
  course grade post-scores OUT [--dry-run]    a graded class's final scores to the LMS (LTI AGS)
  course lti-key PATH         make the LTI tool's private key (0600) and its public JWKS beside it
  course check FILE           a student's notebook: what the grader will say, public tests included
  course submit FILE --student ID   write the hand-in file handin/ID__exNN_slug.ipynb the grader expects
  course submit FILE                on the class's hub: hand in through its exchange (docs/exchange.md)
  course collect | return | feedback | handins | deadlines    the hub exchange's commands (docs/exchange.md)
  course drift --torch V | --python P   re-run the course under another torch or Python, report what changed
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from compile_course.paths import BUILD, NOTEBOOKS, ROOT


def _lessons() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _relative(path: Path) -> str:
    return os.path.relpath(path, ROOT)


def _execute_many(paths: list[Path], out_dir: Path | None, jobs: int, allow_errors: bool = False,
                  kernel_name: str = "python3") -> list[tuple[Path, float | None, str]]:
    """Execute notebooks (``jobs`` at a time); ``out_dir=None`` stores in place.

    Prints one line as each notebook finishes, so a long run shows progress.
    Returns ``(path, seconds, status)`` in the order of ``paths``.
    """
    from .notebooks.execute import execute_notebook, stop_kernels

    def one(path: Path):
        target = (out_dir / path.name) if out_dir else path
        try:
            _, seconds = execute_notebook(path, target, allow_errors=allow_errors, kernel_name=kernel_name)
            return path, seconds, "ok"
        except Exception as exc:  # report and go on: one broken notebook must not hide the others
            return path, None, f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    width = len(str(len(paths)))
    print(f"  running {len(paths)} notebook(s), {jobs} at a time; a line as each one finishes", flush=True)
    started = time.perf_counter()
    results: dict[Path, tuple[Path, float | None, str]] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        for done, future in enumerate(as_completed([pool.submit(one, p) for p in paths]), start=1):
            path, seconds, status = future.result()
            results[path] = (path, seconds, status)
            took = f"{seconds:6.1f} s" if seconds is not None else "      -"
            elapsed = time.perf_counter() - started
            print(f"  [{done:{width}}/{len(paths)}] {_relative(path)}  {took}  {status}   ({elapsed:.0f} s elapsed)",
                  flush=True)
    except KeyboardInterrupt:   # Ctrl-C: no new notebook, the running ones' kernels stopped, then main's one line
        pool.shutdown(wait=False, cancel_futures=True)
        stop_kernels()
        raise
    finally:
        pool.shutdown(wait=True)
    return [results[p] for p in paths]


def cmd_execute(args) -> int:
    paths = [Path(p).resolve() for p in args.notebooks]
    out_dir = Path(args.out).resolve() if args.out else None
    results = _execute_many(paths, out_dir, args.jobs, allow_errors=args.allow_errors)
    return 0 if all(s == "ok" for _, _, s in results) else 1


def cmd_normalize(args) -> int:
    """Rewrite notebook-level metadata as JupyterLab writes it; outputs and cells are left alone."""
    import nbformat

    from .notebooks.normalize import apply_lab_metadata, lab_metadata

    metadata = lab_metadata()
    for name in args.notebooks:
        path = Path(name)
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        changed = apply_lab_metadata(nb, metadata)
        if changed and not args.check:
            nbformat.write(nb, path)
        state = ("needs normalizing" if args.check else "normalized") if changed else "unchanged"
        print(f"  {_relative(path.resolve())}: {state}")
        if changed and args.check:
            args.failed = True
    return 1 if getattr(args, "failed", False) else 0


class SampleGrading:
    """``course run``'s sample grading (``course_grader.samples.demo``), in a process of its own started
    beside the lessons: its warm-up and grading use what the lesson kernels leave of the cores. Its
    output goes to a log and is printed, whole, at its own step; :meth:`result` waits for it."""

    LOG = BUILD / "samples-grading.log"

    def __init__(self, jobs: int):
        import subprocess

        self.LOG.parent.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        self._log = self.LOG.open("w+", encoding="utf-8")
        self.proc = subprocess.Popen([sys.executable, "-m", "course_grader.samples.demo",
                                      "--out", str(BUILD / "samples-grading"), "--jobs", str(jobs)],
                                     stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.ended = self.started
        self._watch = threading.Thread(target=self._wait, daemon=True)   # when it ended, not when asked
        self._watch.start()

    def _wait(self) -> None:
        self.proc.wait()
        self.ended = time.perf_counter()

    def result(self) -> tuple[str, bool, float]:
        """``(summary line, every sample as expected, seconds it took)``; prints its output."""
        code = self.proc.wait()
        self._watch.join()
        seconds = self.ended - self.started
        self._log.seek(0)
        lines = self._log.read().splitlines()
        self._log.close()
        for text in lines[:-1]:
            print(text, flush=True)
        last = lines[-1] if lines else ""
        if code != 0 and " of the " not in last:   # it ended before its summary: a crash, say so
            print(last, flush=True)
            last = f"FAILED (exit {code}; its output: {_relative(self.LOG)})"
        return last, code == 0, seconds

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def print_summary(rows: list[tuple[str, str, str]]) -> None:
    """The end-of-run summary as a table as wide as the terminal (rich measures it), unfolded in a log."""
    from rich.table import Table

    from course_grader.ui.terminal import console

    table = Table(title="Summary", title_justify="left")
    table.add_column("step")
    table.add_column("result", overflow="fold")
    table.add_column("where", overflow="fold")
    for row in rows:
        table.add_row(*row)
    console().print(table)


def cmd_run(args) -> int:
    """Main job. Stored outputs in notebooks/ are left alone; results go to build/.

    The lessons are executed into build/executed/ to prove they run on this machine with this
    torch (the site shows the stored outputs, which ``make test`` checks); the course's one HTML
    is the site, build/site/index.html.
    """
    summary: list[tuple[str, str, str]] = []
    started = time.perf_counter()
    steps = 4

    def step(n: int, what: str) -> float:
        print(f"[{n}/{steps}] {what}   ({time.perf_counter() - started:.0f} s elapsed)", flush=True)
        return time.perf_counter()

    def took(since: float) -> str:
        return f"{time.perf_counter() - since:.0f} s"

    failed = False
    from course_grader.errors import ChangedByHand
    from course_grader.exercise.release import release_all

    t = step(1, "regenerating exercises/ from solutions/")
    try:
        written = release_all(ROOT / "solutions", ROOT / "exercises")
    except ChangedByHand as exc:   # someone's answers in exercises/: never overwritten; say so and go on
        print(f"  {exc}", flush=True)
        summary.append(("exercises regenerated", f"NOT DONE: {', '.join(p.name for p in exc.paths)} changed by "
                        "hand (see above); nothing overwritten", "exercises/"))
        failed = True
    else:
        summary.append(("exercises regenerated", f"{len(written)}, {took(t)}", "exercises/"))

    lessons = _lessons()
    t = step(2, f"executing the {len(lessons)} lesson notebooks into build/executed/ "
                "(proves they run here; stored outputs untouched); the sample grading of step 3 starts beside them")
    from .warm_kernels.kernelspec import warm_kernels

    samples = SampleGrading(args.jobs)
    try:
        with warm_kernels() as kernel:   # each lesson's kernel forked from one that has imported torch (nbval's too)
            results = _execute_many(lessons, BUILD / "executed", args.jobs, kernel_name=kernel)
    except BaseException:   # Ctrl-C: the grading beside the lessons stops too
        samples.stop()
        raise
    ok = sum(s == "ok" for _, _, s in results)
    summary.append(("lessons executed", f"{ok}/{len(lessons)} ok, {took(t)}", "build/executed/"))
    failed |= ok != len(lessons)

    t = step(3, "grading the bundled sample submissions, one of each kind, in the sandbox (started at step 2)")
    try:
        line, grader_ok, seconds = samples.result()
    except BaseException:
        samples.stop()
        raise
    summary.append(("sample grading", f"{line}, {seconds:.0f} s beside the lessons ({took(t)} after them)",
                    "build/samples-grading/feedback/index.html"))
    failed |= not grader_ok

    t = step(4, "building the course site from the stored outputs, with the tlparse report")
    from .site.build import build_site
    try:
        site_index = build_site(BUILD / "site")
    except Exception as exc:  # report it in the summary like the other steps; the run fails
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        summary.append(("course site", f"FAILED: {type(exc).__name__}: {first_line}", ""))
        failed = True
    else:
        summary.append(("course site", f"built, {took(t)}; open it in a browser", str(site_index.relative_to(ROOT))))

    print(f"\ncourse run: {'FAILED' if failed else 'done'} in {time.perf_counter() - started:.0f} s")
    print_summary(summary)
    return 1 if failed else 0


# the commands a student runs in a checkout they may share with their class
STUDENT_COMMANDS = ("workspace", "lab", "check", "submit", "restore")


def main(argv: list[str] | None = None) -> int:
    """``course COMMAND ...``; Ctrl-C ends any command with one line that says how to go on, not a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from course_grader.exercise import seal
    from course_grader.ui.terminal import EXIT_INTERRUPTED, interrupted_line

    if argv[:1] and argv[0] in STUDENT_COMMANDS and (warning := seal.unsealed_warning()):
        print(warning, file=sys.stderr)
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:
        command = argv[0] if argv and not argv[0].startswith("-") else "run"
        print(f"\n{interrupted_line(command)}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    finally:
        if argv[:1] != ["seal"]:   # `course seal --check` changes nothing
            seal.keep_sealed()     # what this command added to build/ of a sealed checkout is closed again


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["release"]:
        from course_grader.exercise.release import main as release_main
        return release_main(argv[1:])
    if argv[:1] == ["publish"]:
        from course_grader.exercise.publish import main as publish_main
        return publish_main(argv[1:])
    if argv[:1] == ["hub-env"]:
        from .hub_env.cli import main as hub_env_main
        return hub_env_main(argv[1:])
    if argv[:1] == ["seal"]:
        from course_grader.exercise.seal import main as seal_main
        return seal_main(argv[1:])
    if argv[:1] == ["drift"]:
        from .drift.cli import main as drift_main
        return drift_main(argv[1:])
    if argv[:2] == ["grade", "post-scores"]:     # the LMS is the exchange's side: course_grader cannot import it
        from course_exchange.ags.command import main as post_scores_main
        return post_scores_main(argv[2:])
    if argv[:1] == ["lti-key"]:
        from course_exchange.ags.tool_key import main as lti_key_main
        return lti_key_main(argv[1:])
    if argv[:1] == ["grade"]:
        from course_grader.ui.grade import main as grade_main
        return grade_main(argv[1:])
    if argv[:1] == ["check"]:
        from course_grader.ui.check import check_main
        return check_main(argv[1:])
    if argv[:1] == ["restore"]:
        from course_grader.ui.restore import main as restore_main
        return restore_main(argv[1:])
    if argv[:1] == ["submit"]:
        from course_exchange.client import on_a_hub
        if on_a_hub():   # on the class's hub: through its exchange, or not at all (never a local file)
            from course_exchange.cli import submit_main as hub_submit_main
            return hub_submit_main(argv[1:])
        from course_grader.ui.submit import submit_main
        return submit_main(argv[1:])
    if argv[:1] and argv[0] in ("collect", "return", "feedback", "handins", "deadlines"):
        from course_exchange.cli import COMMANDS
        return COMMANDS[argv[0]](argv[1:])
    if argv[:1] == ["workspace"]:
        from .workspace_command import main as workspace_main
        return workspace_main(argv[1:])
    if argv[:1] == ["lab"]:
        from .lab import main as lab_main
        return lab_main(argv[1:])
    if argv[:1] == ["new-exercise"]:
        from course_grader.exercise.scaffold import main as scaffold_main
        return scaffold_main(argv[1:])

    parser = argparse.ArgumentParser(allow_abbrev=False, prog="course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", allow_abbrev=False, help="the main job")
    p_run.add_argument("--jobs", type=int, default=2)
    p_run.set_defaults(func=cmd_run)
    p_exec = sub.add_parser("execute", allow_abbrev=False, help="re-execute notebooks and store outputs in place")
    p_exec.add_argument("notebooks", nargs="+")
    p_exec.add_argument("--jobs", type=int, default=2)
    p_exec.add_argument("--out", metavar="DIR", help="write executed copies to DIR instead of storing in place")
    p_exec.add_argument("--allow-errors", action="store_true", help="keep going after a cell raises (used by drift)")
    p_exec.set_defaults(func=cmd_execute)
    p_norm = sub.add_parser("normalize", allow_abbrev=False,
                            help="store notebook metadata as JupyterLab writes it (outputs untouched)")
    p_norm.add_argument("notebooks", nargs="+")
    p_norm.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook needs it")
    p_norm.set_defaults(func=cmd_normalize)
    sub.add_parser("release", help="regenerate exercises/ from solutions/ (see course release --help)")
    sub.add_parser("publish", help="the student edition as a git repository (see course publish --help)")
    sub.add_parser("hub-env", help="build the hub's shared environment for students' servers from the student "
                   "edition (see course hub-env --help)")
    sub.add_parser("seal", help="close the instructor's folders of a shared checkout to others (course seal --help)")
    sub.add_parser("grade", help="grade submissions (see course grade --help)")
    sub.add_parser("lti-key", help="make the LTI tool's private key and its JWKS (course lti-key PATH)")
    sub.add_parser("check", help="check a notebook as the grader will (see course check --help)")
    sub.add_parser("submit", help="write the hand-in file for a notebook (see course submit --help)")
    sub.add_parser("restore", help="put a locked or test cell of your notebook back as released "
                   "(course restore FILE --cell ID)")
    sub.add_parser("collect", help="instructor, on the hub: fetch the hand-ins that count "
                   "(course collect COURSE --to DIR)")
    sub.add_parser("return", help="instructor, on the hub: return feedback pages and scores "
                   "(course return COURSE HANDBACK_DIR)")
    sub.add_parser("feedback", help="student, on the hub: fetch your returned feedback into ~/feedback/COURSE")
    sub.add_parser("handins", help="student, on the hub: your hand-ins, which counts, which came late")
    sub.add_parser("deadlines", help="on the hub: show (or, instructors, set) a course's deadlines")
    sub.add_parser("workspace", help="copy new lessons and exercises into your workspace, work/ "
                   "(never overwrites your changes; see course workspace --help)")
    sub.add_parser("new-exercise",
                   help="start a new exercise's solution notebook (course new-exercise exNN slug TITLE)")
    sub.add_parser("lab", help="JupyterLab on your workspace, opened at lesson 01 (course lab [jupyter lab args])")
    sub.add_parser("drift",
                   help="re-run the course under another torch or Python and report what changed "
                        "(see course drift --help)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
