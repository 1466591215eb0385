"""Management commands of the kb app."""
