"""Serving concerns that sit around the apps: request ids and JSON logs, security headers,
admin login throttling, database-outage answers, replica routing, health and metrics.

Must not hold domain rules, nor read the environment (settings do, through
``config/environment.py``)."""
