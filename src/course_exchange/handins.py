"""The hand-in endpoints: a student hands in and lists their own; an instructor sets deadlines, collects the
hand-ins that count, and reads one hand-in's bytes. (Who may call each is in :mod:`.service`'s table.)

A hand-in is admitted before its body is read (member of the course, a known exercise name, the rate,
the hand-ins in flight, the storage cap). Its time is the moment its body has fully arrived, before the
grader's check, which may wait its turn on a busy hub: a hand-in sent before a deadline is on time
however long the queue of checks was.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime

from course_grader import api

from . import limits
from .errors import BadRequest, GraderRefuses, NotFound, TooMany
from .handler_base import Base
from .store import now, stamp

HANDIN_FILE = re.compile(r"^ex[0-9]{2}[A-Za-z0-9_-]{0,80}\.ipynb\Z")
MAX_ROW_ID = (1 << 63) - 1      # sqlite's largest integer: a longer id is no hand-in (and no 500)


class HandinUpload(Base):
    """POST api/courses/C/handins/FILE: the body (streamed, capped) is the notebook."""

    body_cap = limits.MAX_UPLOAD_BYTES
    body_what = "a hand-in"
    _holding = False

    async def admit(self, course, file_name) -> None:
        self.student = await self.as_student(course)
        self.ex = self.check_name(file_name)
        self.exchange.take_rate(self.student)
        count, size = self.exchange.store.usage(course, self.student)
        if count >= limits.MAX_HANDINS_PER_USER or size >= limits.MAX_STORED_BYTES_PER_USER:
            raise TooMany(f"your storage in course {course} is full ({count} hand-ins, {size} bytes; at most "
                          f"{limits.MAX_HANDINS_PER_USER} and {limits.MAX_STORED_BYTES_PER_USER} bytes): ask your "
                          "instructor (nothing was stored)")
        self.exchange.hold_upload(self.student)
        self._holding = True

    def release(self) -> None:
        if self._holding:
            self._holding = False
            self.exchange.release_upload(self.student)

    def on_finish(self):
        self.release()

    def on_connection_close(self):
        self.release()                               # a client gone mid-body is no longer in flight
        super().on_connection_close()

    def check_name(self, file_name: str) -> api.ExerciseInfo:
        if not HANDIN_FILE.fullmatch(file_name):
            raise BadRequest(f"{file_name!r}: a hand-in is named exNN_slug.ipynb (no folders, no '..')")
        stem = file_name.removesuffix(".ipynb")
        if stem not in self.exchange.exercises:
            known = ", ".join(sorted(self.exchange.exercises))
            raise BadRequest(f"{file_name}: no exercise of that name (known: {known})")
        return self.exchange.exercises[stem]

    async def on_post(self, course, file_name):
        received = now()                             # the body is all here: this is when it was handed in
        data = self.body
        self._chunks.clear()
        loop = asyncio.get_running_loop()
        try:
            check = await loop.run_in_executor(
                self.exchange.checks, lambda: api.check_handin(data, self.student, self.ex.name + ".ipynb",
                                                               solutions=self.exchange.solutions))
        except api.HandinError as exc:
            raise BadRequest(str(exc)) from None
        if check.refused:
            raise GraderRefuses(f"refused: the grader would reject {file_name}: {check.refused}")
        h = self.exchange.store.add_handin(course, self.student, self.ex.id, self.ex.name, data, check.warnings,
                                           received=received)
        h = next(x for x in self.exchange.store.handins(course, self.student) if x.id == h.id)   # late? counts?
        self.reply({"handin": h.public(), "warnings": check.warnings,
                    "deadline": self.exchange.store.deadlines(course).get(self.ex.id)}, 201)


class MyHandins(Base):
    async def on_get(self, course):
        me = await self.as_student(course)
        self.reply({"course": course, "deadlines": self.exchange.store.deadlines(course),
                    "handins": [h.public() for h in self.exchange.store.handins(course, me)]})


class Deadlines(Base):
    body_cap = limits.MAX_JSON_BYTES
    body_what = "a deadlines object"

    async def admit(self, course) -> None:
        if self.request.method == "PUT":
            await self.as_instructor(course)

    async def on_get(self, course):
        await self.as_student(course)
        self.reply({"course": course, "deadlines": self.exchange.store.deadlines(course)})

    async def on_put(self, course):
        me = await self.as_instructor(course)
        body = self.json_body()
        known = {ex.id for ex in self.exchange.exercises.values()}
        wanted: dict[str, str | None] = {}
        for exercise, value in body.items():
            if exercise not in known:
                raise BadRequest(f"{exercise!r}: no such exercise (known: {', '.join(sorted(known))})")
            if value is None:
                wanted[exercise] = None
                continue
            try:
                t = datetime.fromisoformat(str(value))
            except ValueError:
                raise BadRequest(f"{exercise}: {value!r} is not an ISO 8601 time (2026-12-10T17:00+00:00)") from None
            if t.tzinfo is None:
                raise BadRequest(f"{exercise}: {value!r} has no time zone; say which (+00:00 for UTC)")
            wanted[exercise] = stamp(t)
        self.reply({"course": course, "deadlines": self.exchange.store.set_deadlines(course, wanted, me)})


class Collect(Base):
    async def on_get(self, course):
        await self.as_instructor(course)
        handins = self.exchange.store.handins(course)
        self.reply({"course": course, "deadlines": self.exchange.store.deadlines(course),
                    "counted": [h.public() for h in handins if h.counts],
                    "all": len(handins)})


class HandinFile(Base):
    async def on_get(self, course, hid):
        await self.as_instructor(course)
        h = self.exchange.store.handin(int(hid)) if int(hid) <= MAX_ROW_ID else None
        if h is None or h.course != course:
            raise NotFound(f"no hand-in {hid} in course {course}")
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.set_header("X-Handin-Sha256", h.sha256)
        self.finish(self.exchange.store.handin_bytes(h))
