"""The Exercises panel's wire format, between the server extension (:mod:`.handlers`) and the TypeScript panel
(``lab/extension/src/index.ts``, which mirrors these names): its routes, the exercise states and the job states.

Routes are under the server's base URL (``/user/NAME/`` on a hub):

  GET  course-panel/exercises[?student=ID]   the course's exercises and where each stands (:class:`Listing`)
  POST course-panel/exercises/NAME/check     run ``course check`` on the student's copy; answers a :class:`Job`
  POST course-panel/exercises/NAME/handin    run ``course submit`` on it (body ``{"student": ID}`` without a hub)
  POST course-panel/feedback                 run ``course feedback``; the job's ``open`` is the page to show
  GET  course-panel/jobs/ID                  a job: its output so far, and its exit status once done
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, TypedDict

NAMESPACE = "course-panel"
EXERCISE_NAME = r"ex[0-9]{2}_[A-Za-z0-9_]+"   # a route's NAME: the grader's exNN_slug


class Status(StrEnum):
    """Where an exercise stands, the furthest step first reached wins (returned > handed in > checked ...)."""

    MISSING = "missing"          # no copy in the workspace
    NOT_STARTED = "not started"  # no graded answer given yet
    STARTED = "started"          # some answer given, never checked
    CHECKED = "checked"          # `course check` ran on it (the public score)
    HANDED_IN = "handed in"      # a hand-in exists (when, which copy counts)
    RETURNED = "returned"        # the instructor returned feedback (the score)


class Mode(StrEnum):
    HUB = "hub"        # hand-ins go to the class's exchange (docs/exchange.md)
    LOCAL = "local"    # `course submit FILE --student ID`: the hand-in folder of docs/students.md


class JobState(StrEnum):
    RUNNING = "running"
    DONE = "done"        # the command ended with rc 0
    FAILED = "failed"    # it ended with another exit status, or could not start


class Exercise(TypedDict):
    name: str
    title: str
    path: str | None          # the student's copy, relative to Lab's root (None: missing, or outside Lab's root)
    status: str               # a Status
    lines: list[str]          # what the panel says of it, one sentence a line
    problem: str              # "" or why the file cannot be handed in as it is (the grader's own reason)
    feedback: bool            # a returned feedback page to open


class Listing(TypedDict):
    mode: str                 # a Mode
    course: str               # the exchange's course id ("" without a hub)
    problem: str              # "" or what keeps the panel from showing everything (no exchange, no exercises)
    exercises: list[Exercise]


class Job(TypedDict):
    id: str
    action: Literal["check", "handin", "feedback"]
    exercise: str
    command: str              # the command line it runs, as a student would type it
    state: str                # a JobState
    rc: int | None
    output: str
    open: str | None          # a file for Lab to open when the job is done (the feedback page), relative to its root
