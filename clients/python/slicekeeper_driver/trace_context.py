"""W3C trace context on each inventory message, as libs/driver-kit sends it.

Each ``DriverResources`` message carries the ``traceparent`` of the driver's span that produced
it (https://www.w3.org/TR/trace-context/#traceparent-header): slicekeeper's plugin-watcher makes
its receive span a child of it, so the trace of a device change starts at the driver. gRPC
metadata belongs to a whole stream, not to one message, hence a field of the message.

OpenTelemetry is optional: when the ``opentelemetry`` package (``opentelemetry-api``) is
importable, the current span is read through ``opentelemetry.trace.get_current_span()``;
otherwise, or when no valid span is current, nothing is sent. A driver that traces with
something else passes ``traceparent=`` to :meth:`DriverServer.publish` itself.
"""

from __future__ import annotations

import re
from typing import Optional

#: A version-00 W3C traceparent: ``00-<trace id>-<span id>-<flags>``, lowercase hex (the same
#: pattern as slicekeeper's ``TRACEPARENT_PATTERN`` in libs/contracts).
TRACEPARENT_PATTERN = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
#: What a traceparent that does not parse is told (``TRACEPARENT_RULE`` in libs/contracts).
TRACEPARENT_RULE = (
    "must be a W3C traceparent: 00-<32 lowercase hex trace id>-<16 lowercase hex span id>-<2 hex flags>, "
    "ids not all zero"
)


def traceparent_problem(value: object) -> Optional[str]:
    """Why ``value`` is not a version-00 W3C traceparent (an empty string, meaning none, is
    fine); ``None`` when it is one."""
    if not isinstance(value, str):
        return f"must be a string (is {type(value).__name__})"
    if value == "":
        return None
    match = TRACEPARENT_PATTERN.match(value)
    if match is None or int(match.group(1), 16) == 0 or int(match.group(2), 16) == 0:
        return f"{TRACEPARENT_RULE} (is {value!r})"
    return None


def current_traceparent() -> str:
    """The traceparent of the current OpenTelemetry span; ``""`` when OpenTelemetry is not
    installed or no valid span is current (the API's invalid span, as without an SDK)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return ""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return ""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags) & 0xFF:02x}"
