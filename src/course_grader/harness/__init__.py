"""What runs *inside* a sandboxed measuring child: ``child`` (``serve``: the exercise's setup cells,
the student's allow-listed function, one question answered with ``compile_course.primitives``;
``replay``: a validated graph, no student code), ``allowlist``, with which the child checks a
source again before it runs it, and ``denied``, the one table of the parts of torch that neither measured
code nor a replayed graph may reach. It returns data only and never decides a verdict: the exercise's
test cells do, in the grader's process (``course_grader.verdict.testcells``).
"""
