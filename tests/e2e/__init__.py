"""Browser tests (Playwright) of the admin, the explorer and the workflow pages. Must not import
``bench``.
"""
