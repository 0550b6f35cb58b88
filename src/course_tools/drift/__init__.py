"""The torch-upgrade report: re-run the course under another torch and say what changed.

``environment`` builds the second venv, ``compare`` finds the compared cells whose
outputs differ and classifies each change, ``report`` prints and writes the result.
``course drift --torch VERSION_OR_WHEEL`` (``make drift TORCH=...``) runs all three.
"""
