"""Probe harnesses for the sandbox tests: mounted as ``course_grader.harness`` in measuring children."""
