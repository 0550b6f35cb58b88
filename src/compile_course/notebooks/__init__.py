"""Executing and normalizing the course's notebooks (the course site renders them: compile_course.site)."""
