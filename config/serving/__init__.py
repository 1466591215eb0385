"""Serving concerns that sit around the apps: request ids and JSON logs, security headers,
admin login throttling, database-outage answers, replica routing, health and metrics."""
