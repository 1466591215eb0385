"""The REST layer of ``kb``: authentication, parsers and limits, the error envelope, throttling,
the OpenAPI declarations and the entry views. Views call services; they never write rows."""
