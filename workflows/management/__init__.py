"""Management commands of the workflows app (``commands/``). Must not hold code of its own."""
