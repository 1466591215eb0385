"""Analytics: graph statistics, communities and layout for pictures (derived data,
recomputed wholesale)."""
