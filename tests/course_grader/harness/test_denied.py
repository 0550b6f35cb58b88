"""The one table of denied parts of torch (``harness.denied``), as the allow-list and the replay read it."""

from __future__ import annotations

import pytest

from course_grader.errors import AllowListError
from course_grader.harness.allowlist.extract import extract_function
from course_grader.harness.allowlist.rules import for_cell
from course_grader.harness.child import resolve
from course_grader.harness.denied import DENIED, MEASURED_PATHS, REPLAY_DENIED, Refused, measured_denial

ALLOWED = for_cell({"torch", "nn"}, {"time", "copy"}, ())


def accepted(expression: str) -> bool:
    try:
        extract_function(f"def f(x):\n    return {expression}\n", "f", ALLOWED)
    except AllowListError:
        return False
    return True


def test_a_replay_refuses_every_entry_measured_code_is_refused():
    for path in MEASURED_PATHS:
        assert REPLAY_DENIED.search(path), path
        assert REPLAY_DENIED.search(f"torch.nn.functional.{path}"), path   # named through another module too
    assert all(Refused.IN_REPLAY in where for where in DENIED.values())


@pytest.mark.parametrize("path", ["torch.hub.load", "torch.save", "torch.fx.Graph", "torch.compiler.config",
                                  "torch.library.Library"])
def test_measured_code_is_refused_the_measured_entries(path):
    assert measured_denial(path) is not None
    assert not accepted(path)


@pytest.mark.parametrize("path", ["torch.compile", "torch.manual_seed", "torch.autograd.grad",
                                  "torch.testing.assert_close"])
def test_what_only_a_replay_refuses_stays_open_to_measured_code(path):
    assert measured_denial(path) is None and accepted(path)
    assert resolve(path) is None


@pytest.mark.parametrize("target", ["torch.sin", "operator.add", "torch.nn.functional.relu",
                                    "torch._C._set_grad_enabled", "torch.where"])
def test_a_replay_still_runs_the_ops_of_honest_graphs(target):
    assert resolve(target) is not None


@pytest.mark.parametrize("target", ["torch.compiler.set_default_backend", "torch.from_file",
                                    "torch.nn.functional.torch.load", "torch.overrides.handle_torch_function"])
def test_a_replay_refuses_what_measured_code_is_refused_too(target):
    assert resolve(target) is None
