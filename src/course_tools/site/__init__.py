"""The course site: ``build`` renders notebooks/ and exercises/ with Sphinx;
``tlparse_report`` adds torch's own trace report."""
