"""Template helpers of kb's admin pages. Must not run writes or hold rules: presentation only."""
