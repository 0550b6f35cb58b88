"""Executing, normalizing and rendering the course's notebooks."""
