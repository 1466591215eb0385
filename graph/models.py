"""Models of the $app app (filled in by later issues)."""
