"""A driver's inventory: what :class:`~slicekeeper_driver.DriverServer` streams to slicekeeper.

The classes mirror slicekeeper's ``DriverInventory`` (libs/contracts/src/inventory.ts) and
resource.k8s.io/v1 ``Device``; the proto they become (:func:`~slicekeeper_driver.to_proto`) is
``slicekeeper.v1.DriverResources`` (proto/slicekeeper/v1/resources.proto), which documents every
limit. An inventory is always
complete: each one the driver publishes replaces the previous one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping, Optional, Sequence, Union


@dataclass(frozen=True)
class Version:
    """A device attribute holding a semantic version 2.0.0 (``versionValue``), e.g. ``"1.2.3"``.

    A plain ``str`` attribute value is a string attribute; wrap it to publish a version.
    """

    value: str


#: A device attribute's value: ``int`` (int64), ``bool``, ``str`` (at most 64 bytes) or
#: :class:`Version`; or a non-empty ``list`` (or ``tuple``) of one of these types, a list-type
#: attribute (``ints``, ``bools``, ``strings``, ``versions``: 1.36 alpha, gate
#: DRAListTypeAttributes; each element counts towards a device's 48 attribute values).
AttributeValue = Union[
    bool, int, str, Version, Sequence[bool], Sequence[int], Sequence[str], Sequence[Version]
]

#: A Kubernetes quantity such as ``"80Gi"`` or ``"1500m"``; an ``int`` is written as is.
Quantity = Union[str, int]

#: Fields of a newer Kubernetes release than slicekeeper types, merged into the published device
#: (or every slice spec of a pool): member names are resource.k8s.io JSON field names, values
#: anything ``json.dumps`` writes (integers within ±(2^53 - 1)). Must not name a field slicekeeper
#: sets itself; the API server alone checks the values. Sent as JSON text (``pass_through_json``).
PassThrough = Mapping[str, Any]


@dataclass(frozen=True)
class CapacityRequestPolicyRange:
    """The amounts a request may consume: ``min`` and up in ``step``\ s to ``max``
    (resource.k8s.io/v1 ``CapacityRequestPolicyRange``)."""

    min: Quantity
    max: Optional[Quantity] = None
    step: Optional[Quantity] = None


@dataclass(frozen=True)
class CapacityRequestPolicy:
    """What one request may consume of a capacity shared by several (consumable capacity,
    resource.k8s.io/v1 ``CapacityRequestPolicy``; 1.34 alpha, gate DRAConsumableCapacity). Only
    on a device with ``allow_multiple_allocations=True``.

    Attributes:
        default: What a request that does not name the capacity consumes; required with
            ``valid_values`` or ``valid_range``.
        valid_values: At most 10 quantities in ascending order, ``default`` among them.
        valid_range: Instead of ``valid_values`` (set at most one of the two).
    """

    default: Optional[Quantity] = None
    valid_values: Sequence[Quantity] = ()
    valid_range: Optional[CapacityRequestPolicyRange] = None


@dataclass(frozen=True)
class Capacity:
    """A capacity with a request policy. A plain :data:`Quantity` is a capacity without one."""

    value: Quantity
    request_policy: Optional[CapacityRequestPolicy] = None


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


@dataclass(frozen=True)
class Device:
    """One device (resource.k8s.io/v1 ``Device``).

    Attributes:
        name: A DNS-1123 label (lowercase alphanumerics and ``-``, at most 63 characters),
            unique within its pool.
        attributes: By qualified name (a C identifier of at most 32 characters, optionally
            prefixed by ``<DNS subdomain>/``); attributes and capacity together: at most 32.
        capacity: Quantities (or :class:`Capacity` with a request policy) by qualified name.
        taints: At most 16.
        consumes_counters: At most 2 entries.
        health: ``None``: the driver does not report this device's health.
        node_name: Per-device node selection (alpha since 1.33, gate DRAPartitionableDevices):
            in a pool of scope ``"per-device"`` exactly one of ``node_name``, ``node_selector``
            and ``all_nodes=True`` is set on every device; elsewhere none is.
        node_selector: See ``node_name``; exactly one term.
        all_nodes: See ``node_name``; ``None`` or ``True``.
        allow_multiple_allocations: Several requests may share the device, and its capacity is
            consumable (1.34 alpha, gate DRAConsumableCapacity); required by a request policy.
        binds_to_node: An allocation is limited to the node chosen at allocation (1.34 alpha,
            gates DRADeviceBindingConditions and DRAResourceClaimDeviceStatus).
        binding_conditions: Conditions that must be True before binding: at most 4 condition
            types (qualified names); set both lists or neither.
        binding_failure_conditions: Conditions that mean binding failed: at most 4, none among
            ``binding_conditions``.
        pass_through: See :data:`PassThrough`: at most 4096 bytes of JSON.
    """

    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, Union[Quantity, Capacity]] = field(default_factory=dict)
    taints: Sequence[DeviceTaint] = ()
    consumes_counters: Sequence[DeviceCounterConsumption] = ()
    health: Optional[DeviceHealth] = None
    node_name: Optional[str] = None
    node_selector: Optional[NodeSelector] = None
    all_nodes: Optional[bool] = None
    allow_multiple_allocations: Optional[bool] = None
    binds_to_node: Optional[bool] = None
    binding_conditions: Sequence[str] = ()
    binding_failure_conditions: Sequence[str] = ()
    pass_through: Optional[PassThrough] = None


#: Which nodes reach a pool's devices: ``"node"`` (only the plugin's node, the default),
#: ``"all-nodes"``, the nodes a :class:`NodeSelector` matches, or ``"per-device"``: each device
#: names its own (``spec.perDeviceNodeSelection``, alpha since 1.33, gate
#: DRAPartitionableDevices; a cluster-level pool, owned by no Node).
PoolScope = Union[Literal["node", "all-nodes", "per-device"], NodeSelector]


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
        pass_through: See :data:`PassThrough`, merged into every slice spec of the pool: at
            most 16384 bytes of JSON.
    """

    name: str = ""
    devices: Sequence[Device] = ()
    scope: PoolScope = "node"
    generation: Optional[int] = None
    slices: Optional[Sequence[Slice]] = None
    shared_counters: Sequence[CounterSet] = ()
    pass_through: Optional[PassThrough] = None


@dataclass(frozen=True)
class Inventory:
    """A driver's complete inventory on its node. No pools: the driver has nothing, and its
    slices are withdrawn."""

    pools: Sequence[Pool] = ()
