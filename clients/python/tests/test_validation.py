"""Table-driven tests of the checks publish runs before anything goes on the wire."""

import unittest

from slicekeeper_driver import (
    CounterSet,
    Device,
    DeviceHealth,
    DeviceTaint,
    DriverServer,
    HealthStatus,
    InvalidInventoryError,
    Inventory,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pool,
    Slice,
    Version,
    to_proto,
    validate_inventory,
)


def pool(*devices: Device, **fields) -> Inventory:
    return Inventory(pools=[Pool(devices=devices, **fields)])


GPU = Device(
    "gpu-0",
    attributes={"model": "H100", "index": 0, "mig": False, "driverVersion": Version("550.54.15")},
    capacity={"memory": "80Gi", "example.com/slots": 4},
    taints=[DeviceTaint("example.com/hot", "NoSchedule", "yes")],
    health=DeviceHealth(HealthStatus.HEALTHY, timeout_seconds=30),
)

# (case, inventory, the problems' "field: start of rule")
CASES = [
    ("valid", pool(GPU), []),
    ("valid-empty", Inventory(), []),
    (
        "valid-selector-and-counters",
        pool(
            GPU,
            scope=NodeSelector([NodeSelectorTerm([NodeSelectorRequirement("rack", "In", ["a"])])]),
            shared_counters=[CounterSet("mem", {"memory": "80Gi"})],
            generation=3,
        ),
        [],
    ),
    ("device-name", pool(Device("GPU_0")), ["pools[0].devices[0].name: must be a DNS-1123 label"]),
    (
        "duplicate-device",
        pool(Device("gpu-0"), Device("gpu-0")),
        ["pools[0].devices[1].name: must be unique within the pool"],
    ),
    (
        "attribute-name",
        pool(Device("gpu-0", attributes={"has space": 1})),
        ["pools[0].devices[0].attributes['has space']: name must be a C identifier"],
    ),
    (
        "attribute-prefix",
        pool(Device("gpu-0", attributes={"Example.com/model": "x"})),
        ["pools[0].devices[0].attributes['Example.com/model']: name prefix must be a DNS-1123 subdomain"],
    ),
    (
        "attribute-type",
        pool(Device("gpu-0", attributes={"ratio": 0.5})),
        ["pools[0].devices[0].attributes['ratio']: must be an int, bool, str or Version, or a list of one of them (is float)"],
    ),
    (
        "attribute-too-long",
        pool(Device("gpu-0", attributes={"uuid": "x" * 65})),
        ["pools[0].devices[0].attributes['uuid']: must be at most 64 bytes (is 65)"],
    ),
    (
        "attribute-int-range",
        pool(Device("gpu-0", attributes={"serial": 2**53})),
        ["pools[0].devices[0].attributes['serial']: must be within ±9007199254740991"],
    ),
    (
        "version",
        pool(Device("gpu-0", attributes={"driverVersion": Version("550.54")})),
        ["pools[0].devices[0].attributes['driverVersion']: must be a semantic version 2.0.0"],
    ),
    (
        "too-many-attributes",
        pool(Device("gpu-0", attributes={f"a{i}": i for i in range(30)}, capacity={f"c{i}": 1 for i in range(3)})),
        ["pools[0].devices[0]: must have at most 32 attributes and capacities together (has 33)"],
    ),
    (
        "quantity",
        pool(Device("gpu-0", capacity={"memory": "80GB"})),
        ["pools[0].devices[0].capacity['memory']: must be a Kubernetes quantity"],
    ),
    (
        "taint",
        pool(Device("gpu-0", taints=[DeviceTaint("hot", "Sometimes")])),
        ["pools[0].devices[0].taints[0].effect: must be one of NoSchedule, NoExecute, None (is 'Sometimes')"],
    ),
    (
        "health",
        pool(Device("gpu-0", health=DeviceHealth(HealthStatus.UNKNOWN, "x" * 1025, 0))),
        [
            "pools[0].devices[0].health.message: must be at most 1024 characters",
            "pools[0].devices[0].health.timeout_seconds: must be whole seconds within 1 and 86400",
        ],
    ),
    (
        "pool-name",
        Inventory(pools=[Pool(name="a/B"), Pool(name="")]),
        ["pools[0].name: must be DNS-1123 subdomains joined by '/'"],
    ),
    ("duplicate-pool", Inventory(pools=[Pool(), Pool()]), ["pools[1].name: must be unique among the pools"]),
    ("generation", pool(generation=-1), ["pools[0].generation: must be an integer within 0 and"]),
    ("scope", pool(scope="everywhere"), ["pools[0].scope: must be 'node', 'all-nodes', 'per-device' or a NodeSelector"]),
    ("selector-terms", pool(scope=NodeSelector([])), ["pools[0].scope.terms: must have exactly one term"]),
    (
        "devices-and-slices",
        pool(Device("gpu-0"), slices=[Slice([Device("gpu-0")])]),
        [
            "pools[0].devices: must be empty when slices lays out the pool",
        ],
    ),
    (
        "duplicate-across-slices",
        pool(slices=[Slice([Device("gpu-0")]), Slice([Device("gpu-0")])]),
        ["pools[0].slices[1].devices[0].name: must be unique within the pool"],
    ),
    ("counter-set", pool(shared_counters=[CounterSet("Mem", {"memory": "1Gi"})]), ["pools[0].shared_counters[0].name: must be a DNS-1123 label"]),
    ("not-a-device", pool("gpu-0"), ["pools[0].devices[0]: must be a Device (is str)"]),
]


class ValidateInventoryTest(unittest.TestCase):
    def test_cases(self) -> None:
        for name, inventory, expected in CASES:
            with self.subTest(name):
                problems = [str(p) for p in validate_inventory(inventory)]
                self.assertEqual(len(problems), len(expected), problems)
                for problem, start in zip(problems, expected):
                    self.assertTrue(problem.startswith(start), f"{problem!r} does not start with {start!r}")

    def test_publish_refuses_naming_every_problem_and_keeps_the_inventory(self) -> None:
        server = DriverServer("gpu.example.com", "127.0.0.1:0", inventory=pool(GPU))
        with self.assertRaises(InvalidInventoryError) as raised:
            server.publish(pool(Device("GPU_0", capacity={"memory": "lots"})))
        self.assertEqual(
            [p.field for p in raised.exception.problems],
            ["pools[0].devices[0].name", "pools[0].devices[0].capacity['memory']"],
        )
        self.assertIn("pools[0].devices[0].name: must be a DNS-1123 label", str(raised.exception))
        self.assertEqual(server.inventory, pool(GPU))

    def test_driver_settings_are_checked(self) -> None:
        with self.assertRaises(InvalidInventoryError) as raised:
            DriverServer("GPU.example.com", "unix://relative.sock")
        self.assertEqual([p.field for p in raised.exception.problems], ["driver_name", "endpoint"])


class ToProtoTest(unittest.TestCase):
    def test_every_value_type_and_the_scope(self) -> None:
        message = to_proto(pool(GPU, scope="all-nodes", generation=0))
        wire = message.pools[0]
        self.assertTrue(wire.all_nodes)
        self.assertTrue(wire.HasField("generation"))
        device = wire.devices[0]
        self.assertEqual(device.attributes["model"].WhichOneof("value"), "string_value")
        self.assertEqual(device.attributes["index"].WhichOneof("value"), "int_value")
        self.assertEqual(device.attributes["mig"].WhichOneof("value"), "bool_value")
        self.assertEqual(device.attributes["driverVersion"].version_value, "550.54.15")
        self.assertEqual(device.capacity["example.com/slots"].value, "4")
        self.assertEqual(device.taints[0].key, "example.com/hot")
        self.assertEqual(device.health.timeout.seconds, 30)

    def test_a_node_local_pool_without_generation_leaves_both_unset(self) -> None:
        wire = to_proto(pool(Device("gpu-0"))).pools[0]
        self.assertIsNone(wire.WhichOneof("node_scope"))
        self.assertFalse(wire.HasField("generation"))
        self.assertFalse(wire.devices[0].HasField("health"))


if __name__ == "__main__":
    unittest.main()
