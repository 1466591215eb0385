"""Graph analytics: layout for pictures (and, after the layout move, PPR, communities, stats)."""
