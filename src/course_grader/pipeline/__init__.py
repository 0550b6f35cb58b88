"""The grading pipeline: one submission, a class, warm-up, scheduling, the reply cache."""
