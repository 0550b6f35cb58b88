"""Grades back to the LMS by LTI Advantage Assignment and Grade Services: ``course grade post-scores``.

:mod:`.tool_key` makes and reads the tool's key pair, :mod:`.jwks` serves its public half from the
exchange, :mod:`.client` talks AGS through ``pylti1p3``, :mod:`.plan` decides what each score needs,
:mod:`.post` posts and records, :mod:`.where` finds the platform and the students' LMS ids in the hub's
LTI settings and launches, and :mod:`.command` is the command line.
"""
