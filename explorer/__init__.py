"""The graph explorer: staff pages that draw a bank as constellations and light up the answer
an agent would be handed. Views are thin; data comes from the REST API and graph services."""
