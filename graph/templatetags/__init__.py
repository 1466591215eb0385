"""Template helpers of the graph's admin pages (presentation only, no queries of their own)."""
