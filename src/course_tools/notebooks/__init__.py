"""Executing and normalizing the course's notebooks (the course site renders them: course_tools.site)."""
