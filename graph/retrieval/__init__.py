"""Retrieval: the query service, the fold, fact search, personalized PageRank and entries as of a past instant."""
