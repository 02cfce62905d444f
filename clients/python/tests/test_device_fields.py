"""The 1.34–1.36 device fields and pass-through fields: their checks, each case named after the
upstream rule it mirrors (pkg/apis/resource/validation), and their wire form."""

import json
import unittest

from slicekeeper_driver import (
    Capacity,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
    DeviceTaint,
    Inventory,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pool,
    Slice,
    Version,
    pass_through_json,
    to_proto,
    validate_inventory,
)
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb

RACK = NodeSelector([NodeSelectorTerm([NodeSelectorRequirement("rack", "In", ["r1"])])])

NIC = Device(
    "nic-0",
    allow_multiple_allocations=True,
    capacity={
        "bandwidth": Capacity("100G", CapacityRequestPolicy(default="10G", valid_values=["10G", "25G", "100G"])),
        "queues": Capacity(64, CapacityRequestPolicy(default=1, valid_range=CapacityRequestPolicyRange(1, 32, 1))),
        "memory": "16Gi",
    },
)

FABRIC = [
    Device(
        "gpu-0",
        node_name="node-a",
        binds_to_node=True,
        binding_conditions=["example.com/attached"],
        binding_failure_conditions=["example.com/attach-failed", "Failed"],
    ),
    Device("gpu-1", node_selector=RACK),
    Device("fpga-0", all_nodes=True, pass_through={"newField": {"a": [1, "x", None]}}),
]


def devices(*items: Device, **fields) -> Inventory:
    return Inventory(pools=[Pool(devices=items, **fields)])


def per_device(*items: Device) -> Inventory:
    return devices(*items, scope="per-device")


# (case, inventory, the problems' "field: start of rule", in order)
CASES = [
    ("valid-consumable-capacity", devices(NIC), []),
    ("valid-per-device-pool-with-binding-conditions", per_device(*FABRIC), []),
    (
        "valid-list-attributes",
        devices(Device("nic-1", attributes={"ports": [1, 2], "up": [True], "names": ["a"], "fw": [Version("1.0.0")]})),
        [],
    ),
    ("valid-pool-pass-through", devices(Device("x"), pass_through={"newSpecField": {"on": True}}), []),
    (
        "validateDevice-per-device-none-set",
        per_device(Device("gpu-0")),
        ["pools[0].devices[0]: exactly one of node_name, node_selector or all_nodes is required in a pool of scope 'per-device' (sets none)"],
    ),
    (
        "validateDevice-per-device-two-set",
        per_device(Device("gpu-0", node_name="node-a", all_nodes=True)),
        ["pools[0].devices[0]: exactly one of node_name, node_selector or all_nodes is required in a pool of scope 'per-device' (sets node_name, all_nodes)"],
    ),
    (
        "validateDevice-node-selection-outside-a-per-device-pool",
        devices(Device("gpu-0", node_name="node-a")),
        ["pools[0].devices[0]: node_name, node_selector and all_nodes can only be set in a pool of scope 'per-device'"],
    ),
    (
        "validateDevice-per-device-in-explicit-slices",
        Inventory(pools=[Pool(scope="per-device", slices=[Slice([Device("gpu-0")])])]),
        ["pools[0].slices[0].devices[0]: exactly one of node_name, node_selector or all_nodes is required"],
    ),
    (
        "validateDevice-all-nodes-false",
        per_device(Device("gpu-0", all_nodes=False)),
        ["pools[0].devices[0].all_nodes: must be None or True (is False)"],
    ),
    (
        "validateDevice-empty-node-name",
        per_device(Device("gpu-0", node_name="")),
        ["pools[0].devices[0].node_name: must be a node name, a non-empty DNS-1123 subdomain (is '')"],
    ),
    (
        "validateDevice-node-selector-one-term",
        per_device(Device("gpu-0", node_selector=NodeSelector([]))),
        ["pools[0].devices[0].node_selector.terms: must have exactly one term (has 0)"],
    ),
    (
        "validateSingleAllocatableDeviceCapacity-request-policy-needs-multiple-allocations",
        devices(Device("nic-0", capacity={"bw": Capacity("1G", CapacityRequestPolicy(default="1G"))})),
        ["pools[0].devices[0].capacity['bw'].request_policy: is only allowed on a device with allow_multiple_allocations=True"],
    ),
    (
        "validateRequestPolicy-valid-values-and-valid-range",
        devices(
            Device(
                "nic-0",
                allow_multiple_allocations=True,
                capacity={
                    "bw": Capacity(
                        "1G", CapacityRequestPolicy("1G", ["1G"], CapacityRequestPolicyRange("0"))
                    )
                },
            )
        ),
        ["pools[0].devices[0].capacity['bw'].request_policy: must set at most one of valid_values and valid_range"],
    ),
    (
        "validateValidRequestValues-default-required-with-valid-values",
        devices(Device("nic-0", allow_multiple_allocations=True, capacity={"bw": Capacity("1G", CapacityRequestPolicy(valid_values=["1G"]))})),
        ["pools[0].devices[0].capacity['bw'].request_policy.default: is required when valid_values is set"],
    ),
    (
        "validateValidRequestValues-default-required-with-valid-range",
        devices(
            Device(
                "nic-0",
                allow_multiple_allocations=True,
                capacity={"bw": Capacity("1G", CapacityRequestPolicy(valid_range=CapacityRequestPolicyRange("0")))},
            )
        ),
        ["pools[0].devices[0].capacity['bw'].request_policy.default: is required when valid_range is set"],
    ),
    (
        "CapacityRequestPolicyDiscreteMaxOptions-eleven-valid-values",
        devices(
            Device(
                "nic-0",
                allow_multiple_allocations=True,
                capacity={"bw": Capacity("11", CapacityRequestPolicy(default=1, valid_values=list(range(1, 12))))},
            )
        ),
        ["pools[0].devices[0].capacity['bw'].request_policy.valid_values: must have at most 10 values (has 11)"],
    ),
    (
        "request-policy-quantities",
        devices(
            Device(
                "nic-0",
                allow_multiple_allocations=True,
                capacity={
                    "bw": Capacity("1GB", CapacityRequestPolicy(default="1", valid_range=CapacityRequestPolicyRange("x", step="1 G")))
                },
            )
        ),
        [
            "pools[0].devices[0].capacity['bw'].value: must be a Kubernetes quantity",
            "pools[0].devices[0].capacity['bw'].request_policy.valid_range.min: must be a Kubernetes quantity",
            "pools[0].devices[0].capacity['bw'].request_policy.valid_range.step: must be a Kubernetes quantity",
        ],
    ),
    (
        "validateDeviceBindingParameters-failure-conditions-required",
        devices(Device("gpu-0", binding_conditions=["Ready"])),
        ["pools[0].devices[0].binding_failure_conditions: is required when binding_conditions is set"],
    ),
    (
        "validateDeviceBindingParameters-conditions-required",
        devices(Device("gpu-0", binding_failure_conditions=["Failed"])),
        ["pools[0].devices[0].binding_conditions: is required when binding_failure_conditions is set"],
    ),
    (
        "BindingConditionsMaxSize-five-conditions",
        devices(Device("gpu-0", binding_conditions=[f"c{i}" for i in range(5)], binding_failure_conditions=["f"])),
        ["pools[0].devices[0].binding_conditions: must have at most 4 conditions (has 5)"],
    ),
    (
        "validateDeviceBindingParameters-duplicate-and-overlap",
        devices(Device("gpu-0", binding_conditions=["Ready", "Ready"], binding_failure_conditions=["Ready"])),
        [
            "pools[0].devices[0].binding_conditions[1]: must not repeat a condition",
            "pools[0].devices[0].binding_failure_conditions[0]: must not be among binding_conditions",
        ],
    ),
    (
        "validateDeviceBindingParameters-label-name",
        devices(Device("gpu-0", binding_conditions=["not ready"], binding_failure_conditions=["Example.com/x"])),
        [
            "pools[0].devices[0].binding_conditions[0]: must be a condition type",
            "pools[0].devices[0].binding_failure_conditions[0]: must be a condition type",
        ],
    ),
    (
        "validateDevice-flags-are-bools",
        devices(Device("gpu-0", allow_multiple_allocations="yes", binds_to_node=1)),
        [
            "pools[0].devices[0].allow_multiple_allocations: must be a bool or None",
            "pools[0].devices[0].binds_to_node: must be a bool or None",
        ],
    ),
    (
        "validateDeviceAttribute-empty-list",
        devices(Device("nic-0", attributes={"ports": []})),
        ["pools[0].devices[0].attributes['ports']: a list attribute must not be empty"],
    ),
    (
        "validateDeviceAttribute-one-type-per-list",
        devices(Device("nic-0", attributes={"ports": [1, True]})),
        ["pools[0].devices[0].attributes['ports']: a list attribute must hold ints, bools, strs or Versions, one type only (holds bool, int)"],
    ),
    (
        "validateDeviceAttribute-list-elements",
        devices(Device("nic-0", attributes={"names": ["a", "x" * 65], "fw": [Version("1.0")], "ids": [2**53]})),
        [
            "pools[0].devices[0].attributes['names'][1]: must be at most 64 bytes (is 65)",
            "pools[0].devices[0].attributes['fw'][0]: must be a semantic version 2.0.0",
            "pools[0].devices[0].attributes['ids'][0]: must be within ±9007199254740991",
        ],
    ),
    (
        "ResourceSliceMaxAttributeValuesPerDevice-49-values",
        devices(Device("nic-0", attributes={"a": list(range(40)), "b": list(range(8)), "c": 1})),
        ["pools[0].devices[0]: must have at most 48 attribute values, each list element counting as one (has 49)"],
    ),
    (
        "ResourceSliceMaxDevicesWithAdvancedFeatures-65-devices-with-a-list-attribute",
        Inventory(
            pools=[
                Pool(slices=[Slice([Device(f"d{i}") for i in range(64)] + [Device("d64", attributes={"p": [1]})])])
            ]
        ),
        ["pools[0].slices[0].devices: must have at most 64 devices (a device uses taints, counter consumption, list attributes or pass-through fields) (has 65)"],
    ),
    (
        "ResourceSliceMaxDevices-128-without-advanced-features",
        Inventory(pools=[Pool(slices=[Slice([Device(f"d{i}") for i in range(128)])])]),
        [],
    ),
    (
        "ResourceSliceMaxDevicesWithAdvancedFeatures-taints",
        Inventory(pools=[Pool(slices=[Slice([Device(f"d{i}", taints=[DeviceTaint("k", "None")]) for i in range(65)])])]),
        ["pools[0].slices[0].devices: must have at most 64 devices"],
    ),
    (
        "pass-through-names-a-typed-device-field",
        devices(Device("x", pass_through={"nodeName": "n", "basic": {}})),
        [
            "pools[0].devices[0].pass_through['nodeName']: names a field slicekeeper publishes from its typed data",
            "pools[0].devices[0].pass_through['basic']: names a field slicekeeper publishes from its typed data",
        ],
    ),
    (
        "pass-through-names-a-typed-slice-spec-field",
        devices(Device("x"), pass_through={"perDeviceNodeSelection": True}),
        ["pools[0].pass_through['perDeviceNodeSelection']: names a field slicekeeper publishes from its typed data"],
    ),
    (
        "pass-through-field-names-are-json-field-names",
        devices(Device("x", pass_through={"New_Field": 1, 2: 3})),
        [
            "pools[0].devices[0].pass_through: a field name must be a lowerCamelCase identifier, as resource.k8s.io's JSON fields are (is 'New_Field')",
            "pools[0].devices[0].pass_through: a field name must be a lowerCamelCase identifier, as resource.k8s.io's JSON fields are (is 2)",
        ],
    ),
    (
        "pass-through-values-are-json",
        devices(Device("x", pass_through={"a": {1, 2}})),
        ["pools[0].devices[0].pass_through: must hold JSON values only"],
    ),
    (
        "pass-through-no-nan",
        devices(Device("x", pass_through={"a": float("nan")})),
        ["pools[0].devices[0].pass_through: must hold JSON values only"],
    ),
    (
        "pass-through-exact-integers",
        devices(Device("x", pass_through={"a": {"b": [0, -(2**53)]}})),
        ["pools[0].devices[0].pass_through['a']['b'][1]: must be within ±9007199254740991 (is -9007199254740992)"],
    ),
    (
        "pass-through-bounded",
        devices(Device("x", pass_through={"a": "x" * 4096})),
        ["pools[0].devices[0].pass_through: must be at most 4096 bytes as JSON (is 4104)"],
    ),
    (
        "pass-through-a-mapping",
        devices(Device("x", pass_through=[("a", 1)])),
        ["pools[0].devices[0].pass_through: must be a mapping of field names to JSON values (is list)"],
    ),
]


class ValidateDeviceFieldsTest(unittest.TestCase):
    def test_cases(self) -> None:
        for name, inventory, expected in CASES:
            with self.subTest(name):
                problems = [str(p) for p in validate_inventory(inventory)]
                self.assertEqual(len(problems), len(expected), problems)
                for problem, start in zip(problems, expected):
                    self.assertTrue(problem.startswith(start), f"{problem!r} does not start with {start!r}")


class DeviceFieldsToProtoTest(unittest.TestCase):
    def decoded(self, inventory: Inventory) -> pb.DriverResources:
        """The message as slicekeeper reads it off the stream."""
        return pb.DriverResources.FromString(to_proto(inventory).SerializeToString())

    def test_consumable_capacity(self) -> None:
        capacity = self.decoded(devices(NIC)).pools[0].devices[0].capacity
        self.assertTrue(self.decoded(devices(NIC)).pools[0].devices[0].allow_multiple_allocations)
        bandwidth = capacity["bandwidth"]
        self.assertEqual(bandwidth.value, "100G")
        self.assertEqual(bandwidth.request_policy.default, "10G")
        self.assertEqual(list(bandwidth.request_policy.valid_values), ["10G", "25G", "100G"])
        self.assertFalse(bandwidth.request_policy.HasField("valid_range"))
        queues = capacity["queues"].request_policy
        self.assertEqual((queues.default, queues.valid_range.min, queues.valid_range.max, queues.valid_range.step), ("1", "1", "32", "1"))
        self.assertFalse(capacity["memory"].HasField("request_policy"))

    def test_a_range_without_max_and_step_leaves_them_unset(self) -> None:
        policy = CapacityRequestPolicy(default="1", valid_range=CapacityRequestPolicyRange("1"))
        sent = self.decoded(devices(Device("x", capacity={"m": Capacity("8", policy)})))
        valid_range = sent.pools[0].devices[0].capacity["m"].request_policy.valid_range
        self.assertFalse(valid_range.HasField("max"))
        self.assertFalse(valid_range.HasField("step"))

    def test_per_device_node_selection_and_binding_conditions(self) -> None:
        pool = self.decoded(per_device(*FABRIC)).pools[0]
        self.assertEqual(pool.WhichOneof("node_scope"), "per_device_node_selection")
        gpu, selected, fpga = pool.devices
        self.assertEqual(gpu.node_name, "node-a")
        self.assertTrue(gpu.binds_to_node)
        self.assertEqual(list(gpu.binding_conditions), ["example.com/attached"])
        self.assertEqual(list(gpu.binding_failure_conditions), ["example.com/attach-failed", "Failed"])
        self.assertFalse(gpu.HasField("all_nodes"))
        self.assertEqual(selected.node_selector.terms[0].match_expressions[0].values, ["r1"])
        self.assertFalse(selected.HasField("node_name"))
        self.assertTrue(fpga.HasField("all_nodes") and fpga.all_nodes)
        self.assertEqual(json.loads(fpga.pass_through_json), {"newField": {"a": [1, "x", None]}})

    def test_false_flags_are_sent_as_set(self) -> None:
        device = self.decoded(devices(Device("x", allow_multiple_allocations=False, binds_to_node=False))).pools[0].devices[0]
        self.assertTrue(device.HasField("allow_multiple_allocations"))
        self.assertFalse(device.allow_multiple_allocations)
        self.assertTrue(device.HasField("binds_to_node"))

    def test_a_device_without_the_new_fields_leaves_them_unset(self) -> None:
        device = self.decoded(devices(Device("x"))).pools[0].devices[0]
        for name in ("node_name", "node_selector", "all_nodes", "allow_multiple_allocations", "binds_to_node"):
            self.assertFalse(device.HasField(name), name)
        self.assertEqual((list(device.binding_conditions), device.pass_through_json), ([], ""))

    def test_list_attributes(self) -> None:
        attributes = self.decoded(
            devices(Device("x", attributes={"ports": [1, -2], "up": (True, False), "names": ["a"], "fw": [Version("1.2.3")]}))
        ).pools[0].devices[0].attributes
        self.assertEqual(list(attributes["ports"].int_values.values), [1, -2])
        self.assertEqual(list(attributes["up"].bool_values.values), [True, False])
        self.assertEqual(list(attributes["names"].string_values.values), ["a"])
        self.assertEqual(list(attributes["fw"].version_values.values), ["1.2.3"])

    def test_pool_pass_through(self) -> None:
        pool = self.decoded(devices(Device("x"), pass_through={"newSpecField": ["é", 2**53 - 1]})).pools[0]
        self.assertEqual(pool.pass_through_json, '{"newSpecField":["é",9007199254740991]}')
        self.assertEqual(self.decoded(devices(Device("x"))).pools[0].pass_through_json, "")

    def test_pass_through_json_is_compact_json(self) -> None:
        self.assertEqual(pass_through_json({"a": {"b": [1, None]}}), '{"a":{"b":[1,null]}}')
        with self.assertRaises(ValueError):
            pass_through_json({"a": float("inf")})


if __name__ == "__main__":
    unittest.main()
