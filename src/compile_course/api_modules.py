"""The grading test API's modules by name, importable without torch: one list for both sides.

The kernel side (``testing.is_test_api``, which drops the test API from what measured code sees) and the
grader's static checks (``course_grader.verdict.shipping``, ``course_grader.intake.scan``, which run in
processes that never import torch) read the same names here. A module counts with its submodules.
"""

TEST_API_PACKAGES = (
    "compile_course.testing",
    "compile_course.measurement",
    "compile_course.stopwatch",
    "compile_course.primitives",   # measurement's old name, kept for one release
)


def is_test_api_module(name: str) -> bool:
    """Whether the module ``name`` is, or lies inside, one of :data:`TEST_API_PACKAGES`."""
    return any(name == package or name.startswith(package + ".") for package in TEST_API_PACKAGES)
