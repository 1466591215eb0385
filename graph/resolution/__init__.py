"""Resolution: aliases (surface forms naming an entry) and resolving text to one entry, with abstention."""
