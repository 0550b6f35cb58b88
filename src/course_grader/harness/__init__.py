"""What runs *inside* a sandboxed measuring child: ``child`` (``serve``: the exercise's setup cells,
the student's allow-listed function, one question answered with ``compile_course.primitives``;
``replay``: a validated graph, no student code) and ``allowlist``, with which the child checks a
source again before it runs it. It returns data only and never decides a verdict: the exercise's
test cells do, in the grader's process (``course_grader.verdict.testcells``).
"""
