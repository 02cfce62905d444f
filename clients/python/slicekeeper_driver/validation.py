"""Checks a driver can run on an inventory before it goes on the wire.

slicekeeper validates every inventory it receives against all of resource.k8s.io/v1's rules and
reports what it refused through the publish feedback (``invalid``, with each field path), but
only after the round trip. These checks catch, at the call that publishes, the mistakes a driver
author makes most (names, counts, lengths, value types), with the field path and the rule.
They are deliberately a subset: whatever they pass, the server still checks in full (quantity
arithmetic, counter references, per-slice limits of the layout, node selector semantics).
"""

from __future__ import annotations

from datetime import datetime
from typing import List, Mapping, Sequence

from slicekeeper_driver._rules import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    LABEL_RULE,
    LABEL_VALUE,
    MAX_EXACT_INTEGER,
    QUALIFIED_NAME,
    SUBDOMAIN_RULE,
    FieldProblem,
    check_node_selector,
    check_quantity,
    is_int,
)
from slicekeeper_driver.device_validation import (
    MAX_POOL_PASS_THROUGH_BYTES,
    SLICE_SPEC_TYPED_FIELDS,
    check_attributes_and_capacity,
    check_device_fields,
    check_pass_through,
    uses_advanced_features,
)
from slicekeeper_driver.inventory import (
    CounterSet,
    Device,
    DeviceHealth,
    DeviceTaint,
    HealthStatus,
    Inventory,
    NodeSelector,
    Pool,
)

MAX_DRIVER_NAME_LENGTH = 63
MAX_POOL_NAME_LENGTH = 253
MAX_DEVICES_PER_SLICE = 128
#: ``ResourceSliceMaxDevicesWithAdvancedFeatures`` (see ``uses_advanced_features``).
MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_TAINTS_PER_DEVICE = 16
MAX_COUNTER_SETS = 8
MAX_COUNTERS = 32
MAX_COUNTER_CONSUMPTIONS = 2
MAX_HEALTH_MESSAGE_LENGTH = 1024
MAX_HEALTH_TIMEOUT_SECONDS = 86_400
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


class InvalidInventoryError(ValueError):
    """An inventory (or a driver setting) that breaks a rule; ``problems`` lists every one."""

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


def validate_inventory(inventory: Inventory) -> List[FieldProblem]:
    """Every problem :mod:`slicekeeper_driver.validation`'s checks find; empty when none."""
    problems: List[FieldProblem] = []
    if not isinstance(inventory, Inventory):
        return [FieldProblem("inventory", f"must be an Inventory (is {type(inventory).__name__})")]
    names: set[str] = set()
    for i, pool in enumerate(inventory.pools):
        path = f"pools[{i}]"
        if not isinstance(pool, Pool):
            problems.append(FieldProblem(path, f"must be a Pool (is {type(pool).__name__})"))
            continue
        if pool.name in names:
            problems.append(FieldProblem(f"{path}.name", f"must be unique among the pools (is {pool.name!r})"))
        names.add(pool.name)
        _pool(pool, path, problems)
    return problems


def driver_name_problem(name: str) -> str | None:
    """Why ``name`` is no DRA driver name (a DNS-1123 subdomain of at most 63 characters)."""
    if not isinstance(name, str) or name == "":
        return "must be a non-empty string"
    if len(name) > MAX_DRIVER_NAME_LENGTH:
        return f"must be at most {MAX_DRIVER_NAME_LENGTH} characters (is {len(name)})"
    if not DNS1123_SUBDOMAIN.match(name):
        return f"{SUBDOMAIN_RULE} (is {name!r})"
    return None


def _pool(pool: Pool, path: str, problems: List[FieldProblem]) -> None:
    if pool.name != "":
        if len(pool.name) > MAX_POOL_NAME_LENGTH:
            problems.append(
                FieldProblem(f"{path}.name", f"must be at most {MAX_POOL_NAME_LENGTH} characters (is {len(pool.name)})")
            )
        elif not all(DNS1123_SUBDOMAIN.match(part) for part in pool.name.split("/")):
            problems.append(
                FieldProblem(f"{path}.name", f"must be DNS-1123 subdomains joined by '/' (is {pool.name!r})")
            )
    if pool.generation is not None and (
        not is_int(pool.generation) or not 0 <= pool.generation <= MAX_EXACT_INTEGER
    ):
        problems.append(
            FieldProblem(f"{path}.generation", f"must be an integer within 0 and {MAX_EXACT_INTEGER} (is {pool.generation!r})")
        )
    _scope(pool, f"{path}.scope", problems)
    _counter_sets(pool.shared_counters, f"{path}.shared_counters", problems)
    if pool.pass_through is not None:
        check_pass_through(
            pool.pass_through, SLICE_SPEC_TYPED_FIELDS, MAX_POOL_PASS_THROUGH_BYTES, f"{path}.pass_through", problems
        )
    per_device = pool.scope == "per-device"
    seen: set[str] = set()
    if pool.slices is None:
        _devices(pool.devices, per_device, f"{path}.devices", seen, problems)
        return
    if len(pool.devices) > 0:
        problems.append(FieldProblem(f"{path}.devices", "must be empty when slices lays out the pool"))
    for j, layout in enumerate(pool.slices):
        slice_path = f"{path}.slices[{j}]"
        _slice_size(layout.devices, f"{slice_path}.devices", problems)
        _devices(layout.devices, per_device, f"{slice_path}.devices", seen, problems)
        _counter_sets(layout.shared_counters, f"{slice_path}.shared_counters", problems)


def _slice_size(devices: Sequence[Device], path: str, problems: List[FieldProblem]) -> None:
    """128 devices, or 64 when one uses advanced features (``validateResourceSliceSpec``)."""
    advanced = any(isinstance(d, Device) and uses_advanced_features(d) for d in devices)
    limit = MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES if advanced else MAX_DEVICES_PER_SLICE
    if len(devices) > limit:
        why = " (a device uses taints, counter consumption, list attributes or pass-through fields)" if advanced else ""
        problems.append(FieldProblem(path, f"must have at most {limit} devices{why} (has {len(devices)})"))


def _scope(pool: Pool, path: str, problems: List[FieldProblem]) -> None:
    if pool.scope in ("node", "all-nodes", "per-device"):
        return
    if not isinstance(pool.scope, NodeSelector):
        problems.append(
            FieldProblem(path, f"must be 'node', 'all-nodes', 'per-device' or a NodeSelector (is {pool.scope!r})")
        )
        return
    check_node_selector(pool.scope, path, problems)


def _devices(
    devices: Sequence[Device], per_device: bool, path: str, seen: set[str], problems: List[FieldProblem]
) -> None:
    for i, device in enumerate(devices):
        device_path = f"{path}[{i}]"
        if not isinstance(device, Device):
            problems.append(FieldProblem(device_path, f"must be a Device (is {type(device).__name__})"))
            continue
        if not isinstance(device.name, str) or not DNS1123_LABEL.match(device.name) or len(device.name) > 63:
            problems.append(FieldProblem(f"{device_path}.name", f"{LABEL_RULE} (is {device.name!r})"))
        elif device.name in seen:
            problems.append(FieldProblem(f"{device_path}.name", f"must be unique within the pool (is {device.name!r})"))
        seen.add(device.name)
        _device(device, device_path, problems)
        check_device_fields(device, per_device, device_path, problems)


def _device(device: Device, path: str, problems: List[FieldProblem]) -> None:
    entries = len(device.attributes) + len(device.capacity)
    if entries > MAX_ATTRIBUTES_AND_CAPACITIES:
        problems.append(
            FieldProblem(path, f"must have at most {MAX_ATTRIBUTES_AND_CAPACITIES} attributes and capacities together (has {entries})")
        )
    check_attributes_and_capacity(device, path, problems)
    if len(device.taints) > MAX_TAINTS_PER_DEVICE:
        problems.append(
            FieldProblem(f"{path}.taints", f"must have at most {MAX_TAINTS_PER_DEVICE} taints (has {len(device.taints)})")
        )
    for i, taint in enumerate(device.taints):
        _taint(taint, f"{path}.taints[{i}]", problems)
    if len(device.consumes_counters) > MAX_COUNTER_CONSUMPTIONS:
        problems.append(
            FieldProblem(
                f"{path}.consumes_counters",
                f"must have at most {MAX_COUNTER_CONSUMPTIONS} entries (has {len(device.consumes_counters)})",
            )
        )
    for i, consumption in enumerate(device.consumes_counters):
        _counters(consumption.counters, f"{path}.consumes_counters[{i}].counters", problems)
    if device.health is not None:
        _health(device.health, f"{path}.health", problems)


def _taint(taint: DeviceTaint, path: str, problems: List[FieldProblem]) -> None:
    prefix, _, name = taint.key.rpartition("/")
    if (
        not QUALIFIED_NAME.match(name)
        or len(name) > 63
        or ("/" in taint.key and not DNS1123_SUBDOMAIN.match(prefix))
    ):
        problems.append(FieldProblem(f"{path}.key", f"must be a qualified name such as 'example.com/overheating' (is {taint.key!r})"))
    if len(taint.value) > 63 or not LABEL_VALUE.match(taint.value):
        problems.append(FieldProblem(f"{path}.value", f"must be a label value of at most 63 characters (is {taint.value!r})"))
    if taint.effect not in TAINT_EFFECTS:
        problems.append(FieldProblem(f"{path}.effect", f"must be one of {', '.join(TAINT_EFFECTS)} (is {taint.effect!r})"))
    if taint.time_added is not None and not isinstance(taint.time_added, datetime):
        problems.append(FieldProblem(f"{path}.time_added", "must be a datetime"))


def _counter_sets(counter_sets: Sequence[CounterSet], path: str, problems: List[FieldProblem]) -> None:
    if len(counter_sets) > MAX_COUNTER_SETS:
        problems.append(FieldProblem(path, f"must have at most {MAX_COUNTER_SETS} counter sets (has {len(counter_sets)})"))
    names: set[str] = set()
    for i, counter_set in enumerate(counter_sets):
        if not DNS1123_LABEL.match(counter_set.name) or len(counter_set.name) > 63:
            problems.append(FieldProblem(f"{path}[{i}].name", f"{LABEL_RULE} (is {counter_set.name!r})"))
        elif counter_set.name in names:
            problems.append(FieldProblem(f"{path}[{i}].name", f"must be unique within the pool (is {counter_set.name!r})"))
        names.add(counter_set.name)
        _counters(counter_set.counters, f"{path}[{i}].counters", problems)


def _counters(counters: Mapping[str, object], path: str, problems: List[FieldProblem]) -> None:
    if len(counters) > MAX_COUNTERS:
        problems.append(FieldProblem(path, f"must have at most {MAX_COUNTERS} counters (has {len(counters)})"))
    for name, quantity in counters.items():
        if not DNS1123_LABEL.match(name) or len(name) > 63:
            problems.append(FieldProblem(f"{path}[{name!r}]", f"name {LABEL_RULE}"))
        check_quantity(quantity, f"{path}[{name!r}]", problems)


def _health(health: DeviceHealth, path: str, problems: List[FieldProblem]) -> None:
    if not isinstance(health.status, HealthStatus):
        problems.append(FieldProblem(f"{path}.status", f"must be a HealthStatus (is {health.status!r})"))
    if len(health.message) > MAX_HEALTH_MESSAGE_LENGTH:
        problems.append(
            FieldProblem(f"{path}.message", f"must be at most {MAX_HEALTH_MESSAGE_LENGTH} characters (is {len(health.message)})")
        )
    timeout = health.timeout_seconds
    if timeout is not None and (not is_int(timeout) or not 1 <= timeout <= MAX_HEALTH_TIMEOUT_SECONDS):
        problems.append(
            FieldProblem(f"{path}.timeout_seconds", f"must be whole seconds within 1 and {MAX_HEALTH_TIMEOUT_SECONDS} (is {timeout!r})")
        )
