"""Analytics: graph statistics, communities, the layout for pictures and its cache (derived
data, recomputed wholesale; the layout cache subscribes to ``kb.events.bank_changed``).

Must not live here: writes of entries or edges, or another spelling of "current edge".
"""
