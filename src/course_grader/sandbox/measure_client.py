"""The measure client: ``MeasureSession``, one measuring child answering a sequence of harness calls."""

from __future__ import annotations

from course_grader.errors import SandboxFault
from course_grader.sandbox.policy import harness_dir
from course_grader.sandbox.run import Run, RunHost
from course_grader.status import FaultKind
from course_grader.wire import protocol
from course_grader.wire.protocol import Measure, MeasureReply, RunMode


class MeasureSession:
    """One measuring child answering a sequence of requests, each with its own CPU budget.

    Starting a child costs a few tenths of a second; the questions one submission's tests ask
    (or its replays, or its reference questions: never mixed) share one. A request that ends in a
    fault ends the child; the next request starts a new one. Each request runs the harness afresh
    (the child keeps no answer between requests), but a process is a process: what one request
    changed globally, the next one sees, so never share a session between submissions.
    """

    def __init__(self, host: RunHost):
        self.host = host
        self.run: Run | None = None
        self.requests = 0

    def __enter__(self) -> MeasureSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def measure(self, harness: str, entry: str, payload: dict) -> dict:
        protocol.check_json(payload)
        limits = self.host.limits
        if self.run is None or self.run.closed or self.run.exit_status is not None:
            self.close()
            self.run = Run(self.host, RunMode.MEASURE, limits.cpu_s_total,
                           reveal={str(harness_dir()): str(self.host.harness_source)})
        self.requests += 1
        try:
            reply: MeasureReply = self.run.request(Measure(harness=harness, entry=entry, payload=payload),
                                                   MeasureReply, limits.cpu_s_per_cell, limits.wall_s_backstop,
                                                   f"the measurement {harness}.{entry}")
        except BaseException:
            self.close()
            raise
        if not reply.ok or reply.reply is None:
            self.close()
            raise SandboxFault(FaultKind.CRASHED, f"the measured code failed: {reply.error}")
        return reply.reply

    def close(self) -> None:
        if self.run is not None:
            self.run.close()
            self.run = None
