"""The graph explorer: staff pages that draw a bank as constellations and light up the answer
an agent would be handed.

Lives here: thin views, templates and the front end; data comes from the REST API and graph
services. Must not live here: queries or rules of its own, or any write.
"""
