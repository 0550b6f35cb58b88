"""``python -m course_grader.samples``: regenerate tests/samples/submissions."""

import sys

from . import main

sys.exit(main())
