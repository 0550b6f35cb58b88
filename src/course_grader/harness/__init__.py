"""Instructor code that runs *inside* a sandboxed measuring process.

``course_grader.harness.exNN.<entry>(payload) -> dict`` builds the inputs and
candidates, runs the student's allow-listed function source on them, and
returns data only: JSON primitives and tensors encoded by
``course_grader.protocol.encode_tensor``. It never decides a verdict; the
matching ``course_grader.exercises.exNN.grade`` does, in the grader's process.
"""
