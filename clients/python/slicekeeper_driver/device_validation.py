"""The checks of a device's attributes, capacities and the fields of 1.34–1.36 (consumable
capacity, binding conditions, per-device node selection, list attributes) and of pass-through
fields, each after the upstream rule it mirrors (pkg/apis/resource/validation). Part of
:func:`~slicekeeper_driver.validate_inventory`; the same subset policy applies: no quantity
arithmetic (ordering of valid values, a default within its range), which the server checks.
"""

from __future__ import annotations

import re
from typing import List, Mapping, Optional, Sequence

from slicekeeper_driver._rules import (
    C_IDENTIFIER,
    DNS1123_SUBDOMAIN,
    MAX_EXACT_INTEGER,
    SEMVER,
    FieldProblem,
    check_node_selector,
    check_quantity,
    is_qualified_name,
)
from slicekeeper_driver.inventory import (
    Capacity,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
    Version,
)
from slicekeeper_driver.wire import pass_through_json

MAX_ATTRIBUTE_ID_LENGTH = 32
MAX_ATTRIBUTE_DOMAIN_LENGTH = 63
MAX_ATTRIBUTE_VALUE_BYTES = 64
#: ``ResourceSliceMaxAttributeValuesPerDevice``: scalar attributes and list elements together.
MAX_ATTRIBUTE_VALUES = 48
#: ``CapacityRequestPolicyDiscreteMaxOptions``.
MAX_VALID_VALUES = 10
#: ``BindingConditionsMaxSize`` and ``BindingFailureConditionsMaxSize``.
MAX_BINDING_CONDITIONS = 4
#: slicekeeper's own bounds on pass-through fields, bytes of compact JSON (libs/slices).
MAX_DEVICE_PASS_THROUGH_BYTES = 4096
MAX_POOL_PASS_THROUGH_BYTES = 16384

#: Fields slicekeeper publishes a device from (every typed field, in resource.k8s.io's JSON
#: names, and v1beta1's ``basic`` wrapper): a pass-through member must name none.
DEVICE_TYPED_FIELDS = frozenset(
    {
        "name",
        "attributes",
        "capacity",
        "taints",
        "consumesCounters",
        "health",
        "nodeName",
        "nodeSelector",
        "allNodes",
        "allowMultipleAllocations",
        "bindsToNode",
        "bindingConditions",
        "bindingFailureConditions",
        "passThrough",
        "basic",
    }
)
#: Fields of a slice spec slicekeeper writes itself: a pool's pass-through member names none.
SLICE_SPEC_TYPED_FIELDS = frozenset(
    {"driver", "pool", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection", "devices", "sharedCounters"}
)
_JSON_FIELD_NAME = re.compile(r"[a-z][A-Za-z0-9]*")

_PER_DEVICE_RULE = "exactly one of node_name, node_selector or all_nodes is required in a pool of scope 'per-device'"


def check_attributes_and_capacity(device: Device, path: str, problems: List[FieldProblem]) -> None:
    """Names, values (scalar and list, ``validateDeviceAttribute``), the 48 attribute values
    (``numEntriesDeviceAttribute``) and capacities with their request policies."""
    values = 0
    for name, value in device.attributes.items():
        attribute_path = f"{path}.attributes[{name!r}]"
        _qualified_name(name, attribute_path, problems)
        values += _attribute(value, attribute_path, problems)
    if values > MAX_ATTRIBUTE_VALUES:
        problems.append(
            FieldProblem(path, f"must have at most {MAX_ATTRIBUTE_VALUES} attribute values, each list element counting as one (has {values})")
        )
    multiple = device.allow_multiple_allocations is True
    for name, capacity in device.capacity.items():
        capacity_path = f"{path}.capacity[{name!r}]"
        _qualified_name(name, capacity_path, problems)
        if not isinstance(capacity, Capacity):
            check_quantity(capacity, capacity_path, problems)
            continue
        check_quantity(capacity.value, f"{capacity_path}.value", problems)
        if capacity.request_policy is not None:
            _request_policy(capacity.request_policy, multiple, f"{capacity_path}.request_policy", problems)


def check_device_fields(device: Device, per_device: bool, path: str, problems: List[FieldProblem]) -> None:
    """Node selection (``validateDevice``), the flags, binding conditions
    (``validateDeviceBindingParameters``) and pass-through fields."""
    _node_selection(device, per_device, path, problems)
    for flag in ("allow_multiple_allocations", "binds_to_node"):
        value = getattr(device, flag)
        if value is not None and not isinstance(value, bool):
            problems.append(FieldProblem(f"{path}.{flag}", f"must be a bool or None (is {value!r})"))
    _binding_conditions(device.binding_conditions, device.binding_failure_conditions, path, problems)
    if device.pass_through is not None:
        check_pass_through(device.pass_through, DEVICE_TYPED_FIELDS, MAX_DEVICE_PASS_THROUGH_BYTES, f"{path}.pass_through", problems)


def uses_advanced_features(device: Device) -> bool:
    """Whether ``device`` lowers its slice's limit to 64 devices
    (``ResourceSliceMaxDevicesWithAdvancedFeatures``): taints, counter consumption or a list
    attribute, and, by slicekeeper's own rule, pass-through fields (their release may count
    them as advanced)."""
    return (
        len(device.taints) > 0
        or len(device.consumes_counters) > 0
        or any(isinstance(v, (list, tuple)) for v in device.attributes.values())
        or bool(device.pass_through)
    )


def check_pass_through(
    fields: object, typed: frozenset[str], max_bytes: int, path: str, problems: List[FieldProblem]
) -> None:
    """Pass-through fields: a mapping of JSON field names, none of them typed, whose values are
    JSON with integers slicekeeper carries exactly, at most ``max_bytes`` of compact JSON."""
    if not isinstance(fields, Mapping):
        problems.append(FieldProblem(path, f"must be a mapping of field names to JSON values (is {type(fields).__name__})"))
        return
    for name in fields:
        if not isinstance(name, str) or not _JSON_FIELD_NAME.fullmatch(name):
            problems.append(
                FieldProblem(path, f"a field name must be a lowerCamelCase identifier, as resource.k8s.io's JSON fields are (is {name!r})")
            )
        elif name in typed:
            problems.append(FieldProblem(f"{path}[{name!r}]", "names a field slicekeeper publishes from its typed data; set that field instead"))
    before = len(problems)
    _exact_integers(fields, path, problems)
    if len(problems) > before:
        return
    try:
        text = pass_through_json(fields)
    except (TypeError, ValueError) as error:
        problems.append(FieldProblem(path, f"must hold JSON values only ({error})"))
        return
    size = len(text.encode())
    if size > max_bytes:
        problems.append(FieldProblem(path, f"must be at most {max_bytes} bytes as JSON (is {size})"))


def _exact_integers(value: object, path: str, problems: List[FieldProblem]) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > MAX_EXACT_INTEGER:
            problems.append(FieldProblem(path, f"must be within ±{MAX_EXACT_INTEGER} (is {value})"))
    elif isinstance(value, Mapping):
        for key, member in value.items():
            _exact_integers(member, f"{path}[{key!r}]", problems)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _exact_integers(item, f"{path}[{i}]", problems)


def _qualified_name(name: str, path: str, problems: List[FieldProblem]) -> None:
    """An attribute or capacity name: a C identifier of at most 32 characters, optionally
    prefixed by a DNS subdomain of at most 63 characters and '/'."""
    prefix, _, identifier = name.rpartition("/")
    if "/" in name and (prefix == "" or len(prefix) > MAX_ATTRIBUTE_DOMAIN_LENGTH or not DNS1123_SUBDOMAIN.match(prefix)):
        problems.append(
            FieldProblem(path, f"name prefix must be a DNS-1123 subdomain of at most {MAX_ATTRIBUTE_DOMAIN_LENGTH} characters (is {prefix!r})")
        )
    if not C_IDENTIFIER.match(identifier) or len(identifier) > MAX_ATTRIBUTE_ID_LENGTH:
        problems.append(
            FieldProblem(path, f"name must be a C identifier of at most {MAX_ATTRIBUTE_ID_LENGTH} characters (is {identifier!r})")
        )


def _attribute(value: object, path: str, problems: List[FieldProblem]) -> int:
    """Checks one attribute; returns how many values it holds."""
    if not isinstance(value, (list, tuple)):
        _scalar(value, path, problems)
        return 1
    if len(value) == 0:
        problems.append(FieldProblem(path, "a list attribute must not be empty"))
        return 0
    kinds = {_kind(item) for item in value}
    if len(kinds) != 1 or None in kinds:
        problems.append(
            FieldProblem(path, f"a list attribute must hold ints, bools, strs or Versions, one type only (holds {', '.join(sorted(type(v).__name__ for v in value))})")
        )
        return len(value)
    for i, item in enumerate(value):
        _scalar(item, f"{path}[{i}]", problems)
    return len(value)


def _kind(value: object) -> Optional[str]:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, Version):
        return "version"
    if isinstance(value, str):
        return "str"
    return None


def _scalar(value: object, path: str, problems: List[FieldProblem]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_EXACT_INTEGER:
            problems.append(FieldProblem(path, f"must be within ±{MAX_EXACT_INTEGER} (is {value})"))
        return
    if isinstance(value, Version):
        if len(value.value.encode()) > MAX_ATTRIBUTE_VALUE_BYTES or not SEMVER.match(value.value):
            problems.append(
                FieldProblem(path, f"must be a semantic version 2.0.0 of at most {MAX_ATTRIBUTE_VALUE_BYTES} bytes (is {value.value!r})")
            )
        return
    if isinstance(value, str):
        size = len(value.encode())
        if size > MAX_ATTRIBUTE_VALUE_BYTES:
            problems.append(FieldProblem(path, f"must be at most {MAX_ATTRIBUTE_VALUE_BYTES} bytes (is {size})"))
        return
    problems.append(FieldProblem(path, f"must be an int, bool, str or Version, or a list of one of them (is {type(value).__name__})"))


def _request_policy(policy: object, multiple: bool, path: str, problems: List[FieldProblem]) -> None:
    if not isinstance(policy, CapacityRequestPolicy):
        problems.append(FieldProblem(path, f"must be a CapacityRequestPolicy (is {type(policy).__name__})"))
        return
    if not multiple:
        problems.append(FieldProblem(path, "is only allowed on a device with allow_multiple_allocations=True"))
    if policy.default is not None:
        check_quantity(policy.default, f"{path}.default", problems)
    if len(policy.valid_values) > 0 and policy.valid_range is not None:
        problems.append(FieldProblem(path, "must set at most one of valid_values and valid_range"))
    elif (len(policy.valid_values) > 0 or policy.valid_range is not None) and policy.default is None:
        which = "valid_values" if len(policy.valid_values) > 0 else "valid_range"
        problems.append(FieldProblem(f"{path}.default", f"is required when {which} is set"))
    if len(policy.valid_values) > MAX_VALID_VALUES:
        problems.append(
            FieldProblem(f"{path}.valid_values", f"must have at most {MAX_VALID_VALUES} values (has {len(policy.valid_values)})")
        )
    for i, value in enumerate(policy.valid_values):
        check_quantity(value, f"{path}.valid_values[{i}]", problems)
    valid_range = policy.valid_range
    if valid_range is None:
        return
    if not isinstance(valid_range, CapacityRequestPolicyRange):
        problems.append(FieldProblem(f"{path}.valid_range", f"must be a CapacityRequestPolicyRange (is {type(valid_range).__name__})"))
        return
    check_quantity(valid_range.min, f"{path}.valid_range.min", problems)
    for bound in ("max", "step"):
        value = getattr(valid_range, bound)
        if value is not None:
            check_quantity(value, f"{path}.valid_range.{bound}", problems)


def _node_selection(device: Device, per_device: bool, path: str, problems: List[FieldProblem]) -> None:
    chosen = [
        name
        for name, value in (
            ("node_name", device.node_name),
            ("node_selector", device.node_selector),
            ("all_nodes", device.all_nodes),
        )
        if value is not None
    ]
    if not per_device:
        if chosen:
            problems.append(
                FieldProblem(path, f"node_name, node_selector and all_nodes can only be set in a pool of scope 'per-device' (sets {', '.join(chosen)})")
            )
        return
    if len(chosen) != 1:
        problems.append(FieldProblem(path, f"{_PER_DEVICE_RULE} (sets {', '.join(chosen) or 'none'})"))
    if device.node_name is not None and (
        not isinstance(device.node_name, str) or len(device.node_name) > 253 or not DNS1123_SUBDOMAIN.match(device.node_name)
    ):
        problems.append(FieldProblem(f"{path}.node_name", f"must be a node name, a non-empty DNS-1123 subdomain (is {device.node_name!r})"))
    if device.node_selector is not None:
        check_node_selector(device.node_selector, f"{path}.node_selector", problems)
    if device.all_nodes is not None and device.all_nodes is not True:
        problems.append(FieldProblem(f"{path}.all_nodes", f"must be None or True (is {device.all_nodes!r})"))


def _binding_conditions(
    conditions: Sequence[str], failures: Sequence[str], path: str, problems: List[FieldProblem]
) -> None:
    for field, items in (("binding_conditions", conditions), ("binding_failure_conditions", failures)):
        if len(items) > MAX_BINDING_CONDITIONS:
            problems.append(FieldProblem(f"{path}.{field}", f"must have at most {MAX_BINDING_CONDITIONS} conditions (has {len(items)})"))
        seen: set[str] = set()
        for i, condition in enumerate(items):
            if not is_qualified_name(condition):
                problems.append(
                    FieldProblem(f"{path}.{field}[{i}]", f"must be a condition type, a qualified name such as 'example.com/attached' (is {condition!r})")
                )
            elif condition in seen:
                problems.append(FieldProblem(f"{path}.{field}[{i}]", f"must not repeat a condition (is {condition!r})"))
            seen.add(condition)
    for i, condition in enumerate(failures):
        if condition in conditions:
            problems.append(
                FieldProblem(f"{path}.binding_failure_conditions[{i}]", f"must not be among binding_conditions (is {condition!r})")
            )
    if len(conditions) > 0 and len(failures) == 0:
        problems.append(FieldProblem(f"{path}.binding_failure_conditions", "is required when binding_conditions is set"))
    if len(failures) > 0 and len(conditions) == 0:
        problems.append(FieldProblem(f"{path}.binding_conditions", "is required when binding_failure_conditions is set"))
