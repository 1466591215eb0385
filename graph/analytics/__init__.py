"""Analytics: graph statistics and communities (derived data, recomputed wholesale)."""
