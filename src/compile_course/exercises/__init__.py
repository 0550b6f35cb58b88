"""Exercises: ``release`` turns each solution notebook into its student copy."""
