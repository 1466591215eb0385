"""Management commands of the graph app."""
