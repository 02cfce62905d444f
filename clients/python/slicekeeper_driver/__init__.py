"""slicekeeper's driver SDK for Python: serve your DRA driver's inventory to slicekeeper.

A driver creates a :class:`DriverServer`, starts it, registers the endpoint with the
registration API (:class:`RegistrationClient`) and publishes an :class:`Inventory` whenever its
devices change. It needs Debian's ``python3-grpcio`` and ``python3-protobuf`` only.

The protobuf and gRPC modules under ``_generated`` are generated from proto/ by
tools/generate-python.mjs (never edited); they import each other as
``slicekeeper_driver._generated…``, so this package needs no sys.path entry.
"""

import logging

try:
    import grpc  # noqa: F401
    import google.protobuf  # noqa: F401
except ImportError as missing:
    raise ImportError(
        f"slicekeeper_driver needs grpcio and protobuf ({missing}): install Debian's python3-grpcio "
        "and python3-protobuf and run Debian's /usr/bin/python3 (another python3 on PATH may lack them)"
    ) from missing

from slicekeeper_driver.feedback import PublishFeedback, RegistrationStatus
from slicekeeper_driver.inventory import (
    AttributeValue,
    Capacity,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CounterSet,
    Device,
    DeviceCounterConsumption,
    DeviceHealth,
    DeviceTaint,
    HealthStatus,
    Inventory,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PassThrough,
    Pool,
    PoolScope,
    Quantity,
    Slice,
    Version,
)
from slicekeeper_driver.registration import PluginIdentity, RegistrationClient, RegistrationError
from slicekeeper_driver.server import DRA_PLUGIN_TYPE, SUPPORTED_VERSIONS, DriverServer
from slicekeeper_driver.trace_context import TRACEPARENT_RULE, current_traceparent
from slicekeeper_driver.validation import FieldProblem, InvalidInventoryError, validate_inventory
from slicekeeper_driver.wire import pass_through_json, to_proto

# A library logs only where the application configured logging (the standard library's advice).
logging.getLogger("slicekeeper_driver").addHandler(logging.NullHandler())

__all__ = [
    "AttributeValue",
    "Capacity",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CounterSet",
    "DRA_PLUGIN_TYPE",
    "Device",
    "DeviceCounterConsumption",
    "DeviceHealth",
    "DeviceTaint",
    "DriverServer",
    "FieldProblem",
    "HealthStatus",
    "InvalidInventoryError",
    "Inventory",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PassThrough",
    "PluginIdentity",
    "Pool",
    "PoolScope",
    "PublishFeedback",
    "Quantity",
    "RegistrationClient",
    "RegistrationError",
    "RegistrationStatus",
    "SUPPORTED_VERSIONS",
    "Slice",
    "TRACEPARENT_RULE",
    "Version",
    "current_traceparent",
    "pass_through_json",
    "to_proto",
    "validate_inventory",
]
