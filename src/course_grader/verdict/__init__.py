"""Verdicts: the exercise's test cells run in the grader, asking sandboxed children for data."""
