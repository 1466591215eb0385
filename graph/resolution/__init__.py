"""Resolution: aliases (surface forms naming an entry) and resolving text to one entry, with
abstention. Must not live here: writes of entries or edges, or guessing past the abstention band.
"""
