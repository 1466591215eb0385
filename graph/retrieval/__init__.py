"""Retrieval: the query service, the fold, fact search, personalized PageRank and entries as of a
past instant.

Must not live here: writes (usage counters aside), response bodies built by services, or another
spelling of "current edge" (statements take ``graph.edges.current.current_edge_sql``).
"""
