"""DriverServer against a real gRPC client, as slicekeeper's plugin-watcher calls it."""

import os
import socket
import tempfile
import threading
import unittest
from typing import Callable, List

import grpc

from slicekeeper_driver import (
    Device,
    DeviceHealth,
    DriverServer,
    HealthStatus,
    InvalidInventoryError,
    Inventory,
    Pool,
    PublishFeedback,
    RegistrationStatus,
    Slice,
)
from slicekeeper_driver._generated.pluginregistration.v1 import api_pb2, api_pb2_grpc
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2_grpc as pb_grpc

#: Bound on every call and wait, seconds: what hangs fails instead.
TIMEOUT = 10


def gpus(count: int) -> Inventory:
    return Inventory(pools=[Pool(name="pool", devices=[Device(f"gpu-{i}") for i in range(count)])])


def names(message: pb.DriverResources) -> List[str]:
    return [d.name for p in message.pools for d in p.devices]


def wait_until(check: Callable[[], bool], what: str) -> None:
    """Polls ``check`` until it holds; fails naming ``what`` after TIMEOUT."""
    done = threading.Event()
    for _ in range(TIMEOUT * 100):
        if check():
            return
        done.wait(0.01)
    raise AssertionError(f"timed out waiting for {what}")


class DriverServerTest(unittest.TestCase):
    def serve(self, **options) -> DriverServer:
        server = DriverServer("gpu.example.com", options.pop("endpoint", "127.0.0.1:0"), **options)
        self.addCleanup(server.stop)
        server.start()
        channel = grpc.insecure_channel(server.endpoint)
        self.addCleanup(channel.close)
        self.publisher = pb_grpc.ResourcePublisherStub(channel)
        self.registration = api_pb2_grpc.RegistrationStub(channel)
        return server

    def watch(self, node: str = "node-a"):
        call = self.publisher.WatchResources(pb.WatchResourcesRequest(node_name=node), timeout=TIMEOUT)
        self.addCleanup(call.cancel)
        return call

    def test_answers_get_info_like_a_kubelet_dra_plugin_and_records_the_registration_status(self) -> None:
        told: List[RegistrationStatus] = []
        server = self.serve(on_registration_status=told.append)
        info = self.registration.GetInfo(api_pb2.InfoRequest(), timeout=TIMEOUT)
        self.assertEqual(info.type, "DRAPlugin")
        self.assertEqual(info.name, "gpu.example.com")
        self.assertEqual(info.endpoint, "")
        self.assertEqual(list(info.supported_versions), ["v1.ResourcePublisher"])
        status = api_pb2.RegistrationStatus(plugin_registered=False, error="no token")
        self.registration.NotifyRegistrationStatus(status, timeout=TIMEOUT)
        self.assertEqual(told, [RegistrationStatus(False, "no token")])
        self.assertEqual(server.registration_status, RegistrationStatus(False, "no token"))

    def test_streams_the_latest_inventory_to_every_stream_per_node_when_asked(self) -> None:
        server = self.serve(inventory=gpus(1))
        a, b = self.watch("node-a"), self.watch("node-b")
        self.assertEqual(names(next(a)), ["gpu-0"])
        self.assertEqual(names(next(b)), ["gpu-0"])
        server.publish(gpus(2))
        self.assertEqual(names(next(a)), ["gpu-0", "gpu-1"])
        self.assertEqual(names(next(b)), ["gpu-0", "gpu-1"])
        server.publish(gpus(3), node_name="node-b")
        self.assertEqual(names(next(b)), ["gpu-0", "gpu-1", "gpu-2"])
        server.publish(gpus(4))
        self.assertEqual(len(names(next(a))), 4)
        self.assertEqual(server.open_streams, 2)
        self.assertEqual(server.watch_calls, 2)

    def test_waits_for_a_first_inventory_when_it_has_none(self) -> None:
        server = self.serve()
        a = self.watch()
        wait_until(lambda: server.open_streams == 1, "the stream to open")
        server.publish(gpus(1))
        self.assertEqual(names(next(a)), ["gpu-0"])

    def test_set_device_health_republishes_with_the_health(self) -> None:
        server = self.serve(inventory=gpus(2))
        a = self.watch()
        next(a)
        server.set_device_health("gpu-1", DeviceHealth(HealthStatus.UNHEALTHY, "ECC errors", 60))
        device = next(a).pools[0].devices[1]
        self.assertEqual(device.health.status, pb.HEALTH_STATUS_UNHEALTHY)
        self.assertEqual(device.health.message, "ECC errors")
        self.assertEqual(device.health.timeout.seconds, 60)
        with self.assertRaises(KeyError):
            server.set_device_health("gpu-9", None)

    def test_set_device_health_reaches_explicitly_laid_out_slices(self) -> None:
        layout = Inventory(pools=[Pool(name="pool", slices=[Slice([Device("gpu-0")]), Slice([Device("gpu-1")])])])
        server = self.serve(inventory=layout)
        server.set_device_health("gpu-1", DeviceHealth(HealthStatus.UNKNOWN), pool="pool")
        slices = server.inventory.pools[0].slices
        self.assertIsNone(slices[0].devices[0].health)
        self.assertEqual(slices[1].devices[0].health, DeviceHealth(HealthStatus.UNKNOWN))
        with self.assertRaisesRegex(KeyError, "of pool 'other'"):
            server.set_device_health("gpu-1", None, pool="other")

    def test_report_once_and_end_streams_end_with_eof(self) -> None:
        server = self.serve(inventory=gpus(1), report_once=True)
        self.assertEqual([names(m) for m in self.watch()], [["gpu-0"]])
        self.assertEqual(server.open_streams, 0)

    def test_stop_fails_the_open_streams_and_is_idempotent(self) -> None:
        server = self.serve(inventory=gpus(1))
        a = self.watch()
        next(a)
        server.stop()
        server.stop()
        with self.assertRaises(grpc.RpcError) as raised:
            next(a)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.UNAVAILABLE)
        with self.assertRaises(RuntimeError):
            server.start()

    def test_serves_on_a_unix_socket_replaces_a_stale_one_and_removes_it(self) -> None:
        directory = tempfile.mkdtemp(prefix="sk-python-driver-")
        path = os.path.join(directory, "plugin.sock")
        # A crashed driver leaves its socket behind; the next one must still start.
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(path)
        stale.close()
        server = self.serve(endpoint=f"unix://{path}", inventory=gpus(4))
        self.assertEqual(server.endpoint, f"unix://{path}")
        self.assertEqual(server.start(), f"unix://{path}")
        self.assertEqual(len(names(next(self.watch()))), 4)
        server.stop()
        self.assertFalse(os.path.exists(path))
        os.rmdir(directory)

    def test_discovery_mode_serves_on_the_driver_socket_in_the_registration_directory(self) -> None:
        directory = tempfile.mkdtemp(prefix="sk-python-registry-")
        registry = os.path.join(directory, "plugins_registry")
        told: List[RegistrationStatus] = []
        server = DriverServer(
            "gpu.example.com", registration_directory=registry, inventory=gpus(2), on_registration_status=told.append
        )
        self.addCleanup(server.stop)
        path = os.path.join(registry, "gpu.example.com.sock")
        self.assertEqual(server.start(), f"unix://{path}")
        channel = grpc.insecure_channel(f"unix://{path}")
        self.addCleanup(channel.close)
        registration = api_pb2_grpc.RegistrationStub(channel)
        # An empty endpoint: the registration socket serves the resource service too (kubelet).
        self.assertEqual(registration.GetInfo(api_pb2.InfoRequest(), timeout=TIMEOUT).endpoint, "")
        registration.NotifyRegistrationStatus(api_pb2.RegistrationStatus(plugin_registered=True), timeout=TIMEOUT)
        self.assertEqual(told, [RegistrationStatus(True, "")])
        call = pb_grpc.ResourcePublisherStub(channel).WatchResources(
            pb.WatchResourcesRequest(node_name="node-a"), timeout=TIMEOUT
        )
        self.addCleanup(call.cancel)
        self.assertEqual(len(names(next(call))), 2)
        server.stop()
        self.assertFalse(os.path.exists(path))
        os.rmdir(registry)
        os.rmdir(directory)

    def test_refuses_where_to_listen_unless_exactly_one_is_given(self) -> None:
        cases = [
            ("both", {"endpoint": "127.0.0.1:0", "registration_directory": "/run/registry"}, "not both"),
            ("neither", {}, "endpoint: required unless registration_directory is set"),
            ("relative-directory", {"registration_directory": "registry"}, "registration_directory: must be an absolute path"),
        ]
        for name, options, problem in cases:
            with self.subTest(name):
                with self.assertRaisesRegex(InvalidInventoryError, problem):
                    DriverServer("gpu.example.com", **options)

    def test_refuses_to_replace_a_file_that_is_no_socket(self) -> None:
        with tempfile.NamedTemporaryFile() as file:
            server = DriverServer("gpu.example.com", f"unix://{file.name}")
            with self.assertRaisesRegex(RuntimeError, "exists and is not a socket"):
                server.start()
            server.stop()
            self.assertTrue(os.path.exists(file.name))

    def test_hands_every_publish_feedback_to_the_driver(self) -> None:
        feedback: List[PublishFeedback] = []
        server = self.serve(on_feedback=feedback.append)
        self.assertIsNone(server.last_feedback)
        self.publisher.NotifyPublishStatus(
            pb.NotifyPublishStatusRequest(
                node_name="node-a",
                snapshot_generation=4,
                outcome=pb.PUBLISH_OUTCOME_INVALID,
                problems=[pb.FieldProblem(field="pools[0].devices[0].name", message="must be a DNS-1123 label")],
                error="pools[0].devices[0].name: must be a DNS-1123 label",
            ),
            timeout=TIMEOUT,
        )
        self.publisher.NotifyPublishStatus(
            pb.NotifyPublishStatusRequest(
                node_name="node-a",
                snapshot_generation=5,
                outcome=pb.PUBLISH_OUTCOME_PUBLISHED,
                dropped_fields=["spec.devices[*].taints (DRADeviceTaints)"],
                slice_names=["gpu.example.com-node-a-x7k2p"],
            ),
            timeout=TIMEOUT,
        )
        self.assertEqual([f.outcome for f in feedback], ["invalid", "synced"])
        self.assertEqual(str(feedback[0].problems[0]), "pools[0].devices[0].name: must be a DNS-1123 label")
        self.assertEqual(feedback[0].error, "pools[0].devices[0].name: must be a DNS-1123 label")
        self.assertEqual(feedback[1].snapshot_generation, 5)
        self.assertEqual(feedback[1].slice_names, ("gpu.example.com-node-a-x7k2p",))
        self.assertEqual(feedback[1].dropped_fields, ("spec.devices[*].taints (DRADeviceTaints)",))
        self.assertIsNone(feedback[1].error)
        self.assertEqual(server.last_feedback, feedback[1])

    def test_refuses_feedback_it_cannot_read_naming_the_field(self) -> None:
        feedback: List[PublishFeedback] = []
        server = self.serve(on_feedback=feedback.append)
        request = pb.NotifyPublishStatusRequest(node_name="n", snapshot_generation=1)
        with self.assertRaises(grpc.RpcError) as raised, self.assertLogs("slicekeeper_driver", "WARNING"):
            self.publisher.NotifyPublishStatus(request, timeout=TIMEOUT)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertRegex(raised.exception.details(), r"^outcome: must be one of PUBLISH_OUTCOME_PUBLISHED, .* \(is 0\)$")
        self.assertEqual(feedback, [])
        self.assertIsNone(server.last_feedback)

    def test_answers_the_feedback_even_when_the_handler_raises(self) -> None:
        def broken(_: PublishFeedback) -> None:
            raise RuntimeError("driver bug")

        server = self.serve(on_feedback=broken)
        request = pb.NotifyPublishStatusRequest(node_name="n", outcome=pb.PUBLISH_OUTCOME_PUBLISHED)
        with self.assertLogs("slicekeeper_driver", "ERROR"):
            self.publisher.NotifyPublishStatus(request, timeout=TIMEOUT)
        self.assertEqual(server.last_feedback.outcome, "synced")

    def test_answers_unimplemented_when_told_not_to_serve_feedback_and_still_streams(self) -> None:
        feedback: List[PublishFeedback] = []
        self.serve(inventory=gpus(1), serve_publish_status=False, on_feedback=feedback.append)
        request = pb.NotifyPublishStatusRequest(node_name="n", outcome=pb.PUBLISH_OUTCOME_PUBLISHED)
        with self.assertRaises(grpc.RpcError) as raised:
            self.publisher.NotifyPublishStatus(request, timeout=TIMEOUT)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(feedback, [])
        self.assertEqual(names(next(self.watch())), ["gpu-0"])


if __name__ == "__main__":
    unittest.main()
