"""The panel's buttons run the ``course`` command itself, as a child process of the Jupyter server.

Check runs ``course check FILE``, Hand in ``course submit FILE`` (with ``--student ID`` without a hub) and Open
feedback ``course feedback``: the very functions a terminal runs (``course_tools.cli.main``), so the panel and
the command line cannot drift apart, and their output is what the panel shows. A child process and not a call
in the server's own: a check starts the grader's sandbox (forks, resource limits, a minute of CPU), which must
neither block the server nor take it down, and a command's output is its own. The child inherits the server's
environment: on a hub, the exchange's URL and the user's API token, which is how ``course submit`` knows to hand
in through the exchange.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .protocol import Job, JobState

MAX_OUTPUT_BYTES = 256 * 1024     # a check's output is a few kB; a runaway one is cut here, saying so
KEEP_JOBS = 50                    # finished jobs kept for the panel to read back


@dataclass
class Running:
    action: str
    exercise: str
    argv: list[str]                 # after `course`
    cwd: Path
    open: str | None = None         # set by the caller when done (the feedback page)
    id: str = field(default_factory=lambda: secrets.token_hex(8))
    output: bytearray = field(default_factory=bytearray)
    rc: int | None = None
    state: JobState = JobState.RUNNING

    def view(self) -> Job:
        return Job(id=self.id, action=self.action, exercise=self.exercise,
                   command=shlex.join(["course", *self.argv]), state=self.state, rc=self.rc,
                   output=self.output.decode("utf-8", errors="replace"), open=self.open)


class Jobs:
    """The server's jobs, one at a time per exercise (a second click while one runs is refused)."""

    def __init__(self):
        self.jobs: dict[str, Running] = {}
        self.tasks: set[asyncio.Task] = set()

    def busy(self, exercise: str) -> Running | None:
        return next((j for j in self.jobs.values() if j.exercise == exercise and j.state is JobState.RUNNING), None)

    def start(self, job: Running, then=None) -> Running:
        """Run ``job`` in the background; ``then(job)`` once it ended with rc 0."""
        done = [j for j in self.jobs.values() if j.state is not JobState.RUNNING]
        for old in done[:max(0, len(self.jobs) - KEEP_JOBS)]:
            del self.jobs[old.id]
        self.jobs[job.id] = job
        task = asyncio.get_running_loop().create_task(self._run(job, then))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return job

    async def _run(self, job: Running, then) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "course_tools.cli", *job.argv, cwd=job.cwd, env=env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        except OSError as exc:
            job.output += f"could not start `course {job.argv[0]}`: {exc}\n".encode()
            job.rc, job.state = -1, JobState.FAILED
            return
        while chunk := await proc.stdout.read(4096):
            if len(job.output) < MAX_OUTPUT_BYTES:
                job.output += chunk[:MAX_OUTPUT_BYTES - len(job.output)]
                if len(job.output) >= MAX_OUTPUT_BYTES:
                    job.output += b"\n[output cut here: more than 256 kB]\n"
        job.rc = await proc.wait()
        if job.rc == 0 and then is not None:
            try:
                then(job)
            except Exception as exc:  # noqa: BLE001 - say it in the job's output, the server goes on
                job.output += f"\n{exc}\n".encode()
                job.rc = 1
        job.state = JobState.DONE if job.rc == 0 else JobState.FAILED
