"""Root pytest configuration: what `pytest --nbval` collects and what it leaves alone."""

# Exercise notebooks are unanswered by design, and the sample submissions are
# graded by the grader's tests, so nbval must not execute them.
collect_ignore = ["exercises", "build", ".venv", "scripts"]
collect_ignore_glob = ["tests/samples/*", "tests/fixtures/*"]

# Timing cells (volatile, never compared) sample for a tenth of their time under test; the
# kernels nbval starts inherit this (compile_course.timing.measure reads it).
import os  # noqa: E402

os.environ.setdefault("COURSE_TIMING_SCALE", "0.1")
