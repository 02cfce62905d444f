"""An :class:`~slicekeeper_driver.Inventory` as the ``slicekeeper.v1.DriverResources`` message
the driver streams (proto/slicekeeper/v1/resources.proto)."""

from __future__ import annotations

import json
from typing import Sequence, Union

from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb
from slicekeeper_driver.inventory import (
    AttributeValue,
    Capacity,
    CounterSet,
    Device,
    HealthStatus,
    Inventory,
    NodeSelector,
    NodeSelectorRequirement,
    PassThrough,
    Pool,
    Quantity,
    Version,
)

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
    elif pool.scope == "per-device":
        message.per_device_node_selection = True
    elif isinstance(pool.scope, NodeSelector):
        message.node_selector.CopyFrom(_node_selector(pool.scope))
    for layout in pool.slices or ():
        message.slices.append(
            pb.Slice(
                devices=[_device(device) for device in layout.devices],
                shared_counters=[_counter_set(c) for c in layout.shared_counters],
            )
        )
    if pool.pass_through is not None:
        message.pass_through_json = pass_through_json(pool.pass_through)
    return message


def _device(device: Device) -> pb.Device:
    message = pb.Device(name=device.name)
    for name, value in device.attributes.items():
        message.attributes[name].CopyFrom(_attribute(value))
    for name, capacity in device.capacity.items():
        message.capacity[name].CopyFrom(_capacity(capacity))
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
    if device.node_name is not None:
        message.node_name = device.node_name
    if device.node_selector is not None:
        message.node_selector.CopyFrom(_node_selector(device.node_selector))
    if device.all_nodes is not None:
        message.all_nodes = device.all_nodes
    if device.allow_multiple_allocations is not None:
        message.allow_multiple_allocations = device.allow_multiple_allocations
    if device.binds_to_node is not None:
        message.binds_to_node = device.binds_to_node
    message.binding_conditions.extend(device.binding_conditions)
    message.binding_failure_conditions.extend(device.binding_failure_conditions)
    if device.pass_through is not None:
        message.pass_through_json = pass_through_json(device.pass_through)
    return message


def pass_through_json(fields: PassThrough) -> str:
    """The JSON text of pass-through fields, as ``pass_through_json`` carries it: compact, and
    without NaN or infinities (not JSON). Raises ``TypeError`` or ``ValueError`` for what JSON
    cannot hold."""
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _capacity(capacity: Union[Quantity, Capacity]) -> pb.DeviceCapacity:
    if not isinstance(capacity, Capacity):
        return pb.DeviceCapacity(value=str(capacity))
    message = pb.DeviceCapacity(value=str(capacity.value))
    policy = capacity.request_policy
    if policy is not None:
        message.request_policy.SetInParent()
        if policy.default is not None:
            message.request_policy.default = str(policy.default)
        message.request_policy.valid_values.extend(str(v) for v in policy.valid_values)
        if policy.valid_range is not None:
            valid_range = message.request_policy.valid_range
            valid_range.min = str(policy.valid_range.min)
            if policy.valid_range.max is not None:
                valid_range.max = str(policy.valid_range.max)
            if policy.valid_range.step is not None:
                valid_range.step = str(policy.valid_range.step)
    return message


def _attribute(value: AttributeValue) -> pb.DeviceAttribute:
    if isinstance(value, (list, tuple)):
        return _list_attribute(value)
    # bool before int: in Python a bool is an int.
    if isinstance(value, bool):
        return pb.DeviceAttribute(bool_value=value)
    if isinstance(value, int):
        return pb.DeviceAttribute(int_value=value)
    if isinstance(value, Version):
        return pb.DeviceAttribute(version_value=value.value)
    return pb.DeviceAttribute(string_value=value)


def _list_attribute(values: Sequence[object]) -> pb.DeviceAttribute:
    """The list form of the first element's type; an empty list is an empty ``ints``, which
    the server refuses (validation names it first)."""
    first = values[0] if len(values) > 0 else 0
    if isinstance(first, bool):
        return pb.DeviceAttribute(bool_values=pb.BoolList(values=list(values)))
    if isinstance(first, int):
        return pb.DeviceAttribute(int_values=pb.IntList(values=list(values)))
    if isinstance(first, Version):
        versions = [v.value if isinstance(v, Version) else str(v) for v in values]
        return pb.DeviceAttribute(version_values=pb.VersionList(values=versions))
    return pb.DeviceAttribute(string_values=pb.StringList(values=list(values)))


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
