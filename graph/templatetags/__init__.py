"""Template helpers of the graph's admin pages. Must not run queries of their own or hold rules:
presentation only.
"""
