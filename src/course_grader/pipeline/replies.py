"""The measuring replies of one grading run: ``ReplyCache`` (kept by question) and ``Measurer`` (``ctx.measure``).

A measuring child sees nothing but its payload, so two requests with equal payloads ask the same
question: the instructor's reference measurements (payloads without student code) are made once per
run, at warm-up, and every student is judged against the same ones. Only successful replies are
kept; a fault is never cached. What a reply *means* is decided elsewhere (the verdict code): here a
reply is only stored and handed back.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from course_grader.errors import SandboxFault


class ReplyCache:
    """Successful measuring replies of one grading run, by (harness, entry, payload)."""

    def __init__(self):
        self.replies: dict[tuple[str, str, str], str] = {}
        self.lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def key(harness: str, entry: str, payload: dict) -> tuple[str, str, str]:
        return harness, entry, json.dumps(payload, sort_keys=True, separators=(",", ":"))

    def get(self, key) -> dict | None:
        with self.lock:
            text = self.replies.get(key)
            if text is not None:
                self.hits += 1
        return None if text is None else json.loads(text)

    def put(self, key, reply: dict) -> None:
        with self.lock:
            self.replies[key] = json.dumps(reply)

    def dump(self) -> list[list[str]]:
        """Every reply as ``[harness, entry, payload, reply]`` strings (for the stored warm-up)."""
        with self.lock:
            return [[*key, text] for key, text in sorted(self.replies.items())]

    def absorb(self, rows: list) -> None:
        """Add the replies of :meth:`dump` (a stored warm-up of the same torch, grader and exercises)."""
        with self.lock:
            for row in rows:
                if isinstance(row, list) and len(row) == 4 and all(isinstance(x, str) for x in row):
                    self.replies.setdefault(tuple(row[:3]), row[3])


@dataclass(frozen=True)
class MeasuringFault:
    """A measuring request that ended in a fault instead of a reply: which entry the verdict code asked for."""

    entry: str               # the harness entry asked for ("student", "replay" ...), or "grade" for the whole run
    fault: SandboxFault


class Measurer:
    """``ctx.measure`` for one submission: the host's measuring children (through the run's reply
    cache), remembering every fault.

    Questions about the student's code, replays and reference questions each get their own child,
    kept for the submission's later questions of the same kind (``GradingHost.session``): never
    mixed, never shared with another submission. A question asked ``alone`` (``student.call(...,
    alone=True)``) gets a fresh child that answers it and ends, so nothing an earlier question ran
    is in that process. ``close()`` ends them."""

    def __init__(self, host, harness: str, cache: ReplyCache | None = None):
        self.host, self.harness, self.cache = host, harness, cache
        self.faults: list[MeasuringFault] = []
        self.seconds = 0.0
        self.sessions: dict[str, Any] = {}

    @staticmethod
    def kind(entry: str, payload: dict) -> str:
        if entry in ("replay", "replay_answer"):   # a replay with the answer loaded: a child of its own too
            return entry
        return "student" if payload.get("function") is not None else "reference"

    @staticmethod
    def alone(payload: dict) -> bool:
        options = payload.get("options")
        return type(options) is dict and options.get("alone") is True

    def _ask(self, entry: str, payload: dict) -> dict:
        if not hasattr(self.host, "session") or self.alone(payload):
            return self.host.measure(self.harness, entry, payload)   # a fresh child, for this request only
        kind = self.kind(entry, payload)
        if kind not in self.sessions:
            self.sessions[kind] = self.host.session()
        return self.sessions[kind].measure(self.harness, entry, payload)

    def __call__(self, entry: str, payload: dict) -> dict:
        from course_grader.errors import SandboxFault

        start = time.perf_counter()
        key = ReplyCache.key(self.harness, entry, payload) if self.cache is not None else None
        try:
            if key is not None and (hit := self.cache.get(key)) is not None:
                return hit
            reply = self._ask(entry, payload)
            if key is not None:
                self.cache.put(key, reply)
            return reply
        except SandboxFault as fault:
            self.faults.append(MeasuringFault(entry, fault))
            raise
        finally:
            self.seconds += time.perf_counter() - start

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()
