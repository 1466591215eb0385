"""The graph's REST views and request shapes: thin adapters that parse, call one service and
present its result. Must not hold domain rules or write rows themselves."""
