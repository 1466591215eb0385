"""Management commands of the kb app (``commands/``). Must not hold code of its own."""
