"""Tests of the graph app: services called directly, one or two end-to-end tests per interface,
query counts on hot paths, the admin/REST twins. Must not import ``bench``.
"""
