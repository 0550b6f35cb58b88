"""The feedback endpoints: an instructor returns a student's pages and score; a student reads only their
own latest return, as JSON and pages (token) or in a browser (the hub's OAuth login).

Pages are served with a Content-Security-Policy that runs no script and loads nothing from elsewhere: a
page holds the student's own code, and it is shown on the hub's origin.
"""

from __future__ import annotations

import json
import re

from course_grader import api

from . import limits
from .errors import BadRequest, NotFound
from .handler_base import Base

PAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.html\Z")
PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


class MyFeedback(Base):
    async def on_get(self, course, page=None):
        me = await self.as_student(course)
        fb = self.exchange.store.feedback(course, me)
        if page is None:
            self.reply({"course": course, "student": me,
                        "feedback": None if fb is None else {k: fb[k] for k in ("id", "returned", "score", "pages")}})
            return
        if not PAGE_NAME.fullmatch(page):
            raise BadRequest(f"{page!r}: not a feedback page name")
        data = self.exchange.store.feedback_page(course, me, page)
        if data is None:
            raise NotFound(f"no feedback page {page} for you in course {course}")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", PAGE_POLICY)
        self.set_header("Cache-Control", "no-store")
        self.finish(data)


class FeedbackPage(MyFeedback):
    """The browser's way to a student's own pages: the hub's OAuth login, then the page."""

    async def on_get(self, course, page=None):
        if not self._user:
            self.redirect(self.get_login_url())
            return
        await super().on_get(course, page or "index.html")


class ReturnFeedback(Base):
    body_cap = limits.MAX_FEEDBACK_BYTES
    body_what = "one student's returned feedback"

    async def admit(self, course, student) -> None:
        await self.as_instructor(course)
        if problem := api.student_id_problem(student):
            raise BadRequest(problem)

    async def on_put(self, course, student):
        me = await self.as_instructor(course)
        try:
            body = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("pages"), dict) or not body["pages"]:
            raise BadRequest('the body must be {"score": {...}, "pages": {"index.html": "...", ...}}')
        score = body.get("score")
        if not isinstance(score, dict):
            raise BadRequest('"score" must be an object, e.g. {"total": 7, "possible": 10}')
        pages: dict[str, bytes] = {}
        for name, text in body["pages"].items():
            if not isinstance(name, str) or not PAGE_NAME.fullmatch(name) or not isinstance(text, str):
                raise BadRequest(f"{name!r}: a page is NAME.html (no folders, no '..') with HTML text")
            pages[name] = text.encode("utf-8")
        if "index.html" not in pages:
            raise BadRequest("the pages must include index.html")
        fb = self.exchange.store.add_return(course, student, score, pages, me)
        self.reply({"course": course, "student": student, "returned": fb["returned"], "pages": fb["pages"]}, 201)
