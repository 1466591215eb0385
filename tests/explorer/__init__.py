"""Tests of the graph explorer's pages and data. Must not import ``bench``."""
