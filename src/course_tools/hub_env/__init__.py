"""``course hub-env PREFIX``: the students' shared environment on a hub, built from the student edition.

The modules, in the order a build runs them:

* :mod:`.reach`: whether every user can reach a path (the base Python, the edition, the environment);
* :mod:`.link_packages`: the third-party packages, hard-linked (or copied) from the instructor's venv
  by each package's own RECORD, at the versions of the edition's ``requirements.lock``;
* :mod:`.build`: the venv, those packages, the course's packages installed non-editable from the
  edition, JupyterLab's settings, the marker that says the build is complete;
* :mod:`.scan`: what must never be inside (a file of ``solutions/``, a hidden test's line, an
  instructor-only module), looked for in the installed environment;
* :mod:`.cli`: the command.
"""
