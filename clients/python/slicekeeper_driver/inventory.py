"""A driver's inventory: what :class:`~slicekeeper_driver.DriverServer` streams to slicekeeper.

The classes mirror slicekeeper's ``DriverInventory`` (libs/contracts/src/inventory.ts) and
resource.k8s.io/v1 ``Device``; the proto they become is ``slicekeeper.v1.DriverResources``
(proto/slicekeeper/v1/resources.proto), which documents every limit. An inventory is always
complete: each one the driver publishes replaces the previous one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Mapping, Optional, Sequence, Union

from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb


@dataclass(frozen=True)
class Version:
    """A device attribute holding a semantic version 2.0.0 (``versionValue``), e.g. ``"1.2.3"``.

    A plain ``str`` attribute value is a string attribute; wrap it to publish a version.
    """

    value: str


#: A device attribute's value: ``int`` (int64), ``bool``, ``str`` (at most 64 bytes) or
#: :class:`Version`.
AttributeValue = Union[bool, int, str, Version]

#: A Kubernetes quantity such as ``"80Gi"`` or ``"1500m"``; an ``int`` is written as is.
Quantity = Union[str, int]


class HealthStatus(enum.Enum):
    """A device's health in KEP-4680's terms. slicekeeper taints an unhealthy device
    ``<driver>/unhealthy`` and one of unknown health ``<driver>/health-unknown``."""

    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class DeviceHealth:
    """What the driver says of a device's health.

    Attributes:
        status: Healthy, unhealthy or unknown.
        message: Why, in the driver's words; at most 1024 characters. Shown in slicekeeper's
            status, not published.
        timeout_seconds: Without a new inventory from the driver for this long (1 to 86400 s),
            slicekeeper considers the health unknown; ``None``: the health holds until the next
            inventory. Publish again (unchanged is fine) at least that often.
    """

    status: HealthStatus
    message: str = ""
    timeout_seconds: Optional[int] = None


@dataclass(frozen=True)
class DeviceTaint:
    """A taint the driver puts on a device (resource.k8s.io/v1 ``DeviceTaint``).

    Attributes:
        key: A qualified name, e.g. ``example.com/overheating``.
        effect: ``NoSchedule``, ``NoExecute`` or ``None``.
        value: A label value (at most 63 characters).
        time_added: When the taint was added; slicekeeper sets it when ``None``.
    """

    key: str
    effect: str
    value: str = ""
    time_added: Optional[datetime] = None


@dataclass(frozen=True)
class DeviceCounterConsumption:
    """Counters a device consumes from one of its pool's counter sets (at most 2 per device)."""

    counter_set: str
    counters: Mapping[str, Quantity]


@dataclass(frozen=True)
class CounterSet:
    """A counter set of a pool (``sharedCounters``): a DNS-1123 label and at most 32 counters."""

    name: str
    counters: Mapping[str, Quantity]


@dataclass(frozen=True)
class Device:
    """One device (resource.k8s.io/v1 ``Device``).

    Attributes:
        name: A DNS-1123 label (lowercase alphanumerics and ``-``, at most 63 characters),
            unique within its pool.
        attributes: By qualified name (a C identifier of at most 32 characters, optionally
            prefixed by ``<DNS subdomain>/``); attributes and capacity together: at most 32.
        capacity: Quantities by qualified name.
        taints: At most 16.
        consumes_counters: At most 2 entries.
        health: ``None``: the driver does not report this device's health.
    """

    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, Quantity] = field(default_factory=dict)
    taints: Sequence[DeviceTaint] = ()
    consumes_counters: Sequence[DeviceCounterConsumption] = ()
    health: Optional[DeviceHealth] = None


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """core/v1 ``NodeSelectorRequirement``: operator ``In``, ``NotIn``, ``Exists``,
    ``DoesNotExist``, ``Gt`` or ``Lt``."""

    key: str
    operator: str
    values: Sequence[str] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """core/v1 ``NodeSelectorTerm``: the requirements are ANDed."""

    match_expressions: Sequence[NodeSelectorRequirement] = ()
    match_fields: Sequence[NodeSelectorRequirement] = ()


@dataclass(frozen=True)
class NodeSelector:
    """core/v1 ``NodeSelector``: the terms are ORed (resource.k8s.io wants exactly one)."""

    terms: Sequence[NodeSelectorTerm]


#: Which nodes reach a pool's devices: ``"node"`` (only the plugin's node, the default),
#: ``"all-nodes"``, or the nodes a :class:`NodeSelector` matches.
PoolScope = Union[Literal["node", "all-nodes"], NodeSelector]


@dataclass(frozen=True)
class Slice:
    """One ResourceSlice of a pool that lays out its slices itself."""

    devices: Sequence[Device]
    shared_counters: Sequence[CounterSet] = ()


@dataclass(frozen=True)
class Pool:
    """A set of devices published together, in one or more ResourceSlices.

    Attributes:
        name: DNS subdomains joined by ``/``, at most 253 characters; ``""`` means the node's
            name (a node-local pool's usual name).
        devices: Laid out by slicekeeper in slices of at most 128 devices.
        scope: See :data:`PoolScope`.
        generation: A generation chosen by the driver (>= 0); ``None``: slicekeeper manages it.
        slices: An explicit layout instead of ``devices`` (set one of the two).
        shared_counters: Counter sets the devices consume from: at most 8.
    """

    name: str = ""
    devices: Sequence[Device] = ()
    scope: PoolScope = "node"
    generation: Optional[int] = None
    slices: Optional[Sequence[Slice]] = None
    shared_counters: Sequence[CounterSet] = ()


@dataclass(frozen=True)
class Inventory:
    """A driver's complete inventory on its node. No pools: the driver has nothing, and its
    slices are withdrawn."""

    pools: Sequence[Pool] = ()


_HEALTH_STATUS = {
    HealthStatus.HEALTHY: pb.HEALTH_STATUS_HEALTHY,
    HealthStatus.UNHEALTHY: pb.HEALTH_STATUS_UNHEALTHY,
    HealthStatus.UNKNOWN: pb.HEALTH_STATUS_UNKNOWN,
}


def to_proto(inventory: Inventory) -> pb.DriverResources:
    """The ``DriverResources`` message of an inventory. Does not validate: see
    :func:`~slicekeeper_driver.validate_inventory`."""
    return pb.DriverResources(pools=[_pool(pool) for pool in inventory.pools])


def _pool(pool: Pool) -> pb.Pool:
    message = pb.Pool(
        name=pool.name,
        devices=[_device(device) for device in pool.devices],
        shared_counters=[_counter_set(counter_set) for counter_set in pool.shared_counters],
    )
    if pool.generation is not None:
        message.generation = pool.generation
    if pool.scope == "all-nodes":
        message.all_nodes = True
    elif isinstance(pool.scope, NodeSelector):
        message.node_selector.CopyFrom(_node_selector(pool.scope))
    for layout in pool.slices or ():
        message.slices.append(
            pb.Slice(
                devices=[_device(device) for device in layout.devices],
                shared_counters=[_counter_set(c) for c in layout.shared_counters],
            )
        )
    return message


def _device(device: Device) -> pb.Device:
    message = pb.Device(name=device.name)
    for name, value in device.attributes.items():
        message.attributes[name].CopyFrom(_attribute(value))
    for name, quantity in device.capacity.items():
        message.capacity[name].value = str(quantity)
    for taint in device.taints:
        added = message.taints.add(key=taint.key, value=taint.value, effect=taint.effect)
        if taint.time_added is not None:
            added.time_added.FromDatetime(taint.time_added)
    for consumption in device.consumes_counters:
        entry = message.consumes_counters.add(counter_set=consumption.counter_set)
        for name, quantity in consumption.counters.items():
            entry.counters[name].value = str(quantity)
    if device.health is not None:
        message.health.status = _HEALTH_STATUS[device.health.status]
        message.health.message = device.health.message
        if device.health.timeout_seconds is not None:
            message.health.timeout.seconds = device.health.timeout_seconds
    return message


def _attribute(value: AttributeValue) -> pb.DeviceAttribute:
    # bool before int: in Python a bool is an int.
    if isinstance(value, bool):
        return pb.DeviceAttribute(bool_value=value)
    if isinstance(value, int):
        return pb.DeviceAttribute(int_value=value)
    if isinstance(value, Version):
        return pb.DeviceAttribute(version_value=value.value)
    return pb.DeviceAttribute(string_value=value)


def _counter_set(counter_set: CounterSet) -> pb.CounterSet:
    message = pb.CounterSet(name=counter_set.name)
    for name, quantity in counter_set.counters.items():
        message.counters[name].value = str(quantity)
    return message


def _node_selector(selector: NodeSelector) -> pb.NodeSelector:
    def requirements(
        items: Sequence[NodeSelectorRequirement],
    ) -> list[pb.NodeSelectorRequirement]:
        return [
            pb.NodeSelectorRequirement(key=r.key, operator=r.operator, values=list(r.values))
            for r in items
        ]

    return pb.NodeSelector(
        terms=[
            pb.NodeSelectorTerm(
                match_expressions=requirements(term.match_expressions),
                match_fields=requirements(term.match_fields),
            )
            for term in selector.terms
        ]
    )
