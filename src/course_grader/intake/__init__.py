"""A hand-in's way in: discovery, loading, and the integrity check of its cells."""
