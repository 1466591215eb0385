"""Management commands of the graph app (``commands/``). Must not hold code of its own."""
