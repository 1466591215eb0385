"""The one hypothesis profile of the suite's property tests over real banks."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings


def property_settings(examples: int, *, shrink_on_request: bool = False) -> settings:
    """``examples`` per property (``KB_PROPERTY_EXAMPLES`` searches deeper), no deadline, no
    example database written into the source tree, and the health checks that a test building
    a bank per example trips. With ``shrink_on_request`` a failure is shrunk only when
    ``KB_PROPERTY_SHRINK=1`` (every step builds a bank: minutes)."""
    phases = settings.default.phases
    if shrink_on_request and not os.environ.get("KB_PROPERTY_SHRINK"):
        phases = [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(
        max_examples=int(os.environ.get("KB_PROPERTY_EXAMPLES", str(examples))),
        phases=phases,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
