"""The grader's commands: ``course grade`` and the student's ``course check`` / ``course submit``."""
