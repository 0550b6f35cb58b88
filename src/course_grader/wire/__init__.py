"""The format between the grader and its children, which both sides import: messages (``protocol``) and
their payloads (``payloads``).

``payloads`` is imported here so that it is loaded with ``protocol`` wherever that is: a measuring
child's template imports the protocol before the grader's package is covered, and its harness then
finds both already loaded (the child sees nothing else of the grader).
"""

from course_grader.wire import payloads, protocol  # noqa: F401 - loaded together (see above)
