"""``pipeline.replies.Measurer``: which measuring child answers a question.

A submission's questions about its code share one child, kept for the submission (``GradingHost.session``);
a question asked ``alone`` (``student.call(..., alone=True)``, ex09's op check) is answered by a fresh child of
its own, in which nothing of the answer ran before (``GradingHost.measure``).
"""

from __future__ import annotations

from course_grader.pipeline.replies import Measurer
from course_grader.wire.payloads import AllowSpec, Arg, ArgKind, CallOptions, FunctionSpec, Op, ServeRequest


class CountingHost:
    """A host that says which child answered: ``("session", n)`` for its n-th kept child, ``("fresh", n)``."""

    def __init__(self):
        self.sessions = 0
        self.fresh = 0

    def measure(self, harness, entry, payload):
        self.fresh += 1
        return {"child": ["fresh", self.fresh]}

    def session(self):
        self.sessions += 1
        number = self.sessions

        class Session:
            def measure(self, harness, entry, payload):
                return {"child": ["session", number]}

            def close(self):
                pass
        return Session()


def question(alone: bool = False, grad: bool = False) -> dict:
    function = FunctionSpec("def f(x):\n    return x\n", AllowSpec(["torch"], [], []))
    return ServeRequest([], function, "f", Op.CALL, [Arg(ArgKind.VALUE, 1)], CallOptions(grad, alone)).to_data()


def test_a_question_asked_alone_gets_a_fresh_child_every_time():
    host = CountingHost()
    measure = Measurer(host, "child")
    assert measure("serve", question())["child"] == ["session", 1]
    assert measure("serve", question(grad=True))["child"] == ["session", 1]   # the submission's kept child
    assert measure("serve", question(alone=True))["child"] == ["fresh", 1]
    assert measure("serve", question(alone=True, grad=True))["child"] == ["fresh", 2]
    assert measure("serve", question())["child"] == ["session", 1]
    assert host.sessions == 1 and host.fresh == 2


def test_only_a_true_alone_option_counts():
    assert not Measurer.alone(question()) and Measurer.alone(question(alone=True))
    assert "alone" not in question()["options"]      # equal questions of before stay equal (the reply cache's key)
    assert not Measurer.alone({"options": {"alone": 1}}) and not Measurer.alone({"options": None})
