"""``course_tools``: the ``course`` command and the course's tooling (run, notebooks, drift, site,
warm kernels, lab, lock). On top of the grader and the student helpers; nothing imports it back."""
