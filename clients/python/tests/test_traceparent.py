"""The traceparent each inventory message carries, as slicekeeper's plugin-watcher reads it.

The ``opentelemetry`` package is optional and Debian's python3 here has none, so the automatic
path runs against a stand-in module put in ``sys.modules``: it has the surface of
opentelemetry-api that the SDK uses (``trace.get_current_span().get_span_context()`` with
``is_valid``, ``trace_id``, ``span_id``, ``trace_flags``), nothing more.
"""

import sys
import types
import unittest
from contextlib import contextmanager
from typing import Iterator, Optional
from unittest import mock

import grpc

from slicekeeper_driver import Device, DriverServer, InvalidInventoryError, Inventory, Pool
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2_grpc as pb_grpc

TIMEOUT = 10
GIVEN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
RULE = (
    "must be a W3C traceparent: 00-<32 lowercase hex trace id>-<16 lowercase hex span id>-<2 hex flags>, "
    "ids not all zero"
)


def gpus(count: int) -> Inventory:
    return Inventory(pools=[Pool(name="pool", devices=[Device(f"gpu-{i}") for i in range(count)])])


class _SpanContext:
    def __init__(self, trace_id: int, span_id: int, trace_flags: int) -> None:
        self.trace_id, self.span_id, self.trace_flags = trace_id, span_id, trace_flags

    @property
    def is_valid(self) -> bool:
        return self.trace_id != 0 and self.span_id != 0


class _Span:
    def __init__(self, context: _SpanContext) -> None:
        self._context = context

    def get_span_context(self) -> _SpanContext:
        return self._context


@contextmanager
def opentelemetry_current_span(context: Optional[_SpanContext]) -> Iterator[None]:
    """An importable ``opentelemetry`` whose current span has ``context`` (``None``: the API's
    invalid span, what ``get_current_span()`` returns outside any span)."""
    current = _Span(context if context is not None else _SpanContext(0, 0, 0))
    trace = types.ModuleType("opentelemetry.trace")
    trace.get_current_span = lambda: current  # type: ignore[attr-defined]
    package = types.ModuleType("opentelemetry")
    package.trace = trace  # type: ignore[attr-defined]
    with mock.patch.dict(sys.modules, {"opentelemetry": package, "opentelemetry.trace": trace}):
        yield


@contextmanager
def opentelemetry_missing() -> Iterator[None]:
    """``import opentelemetry`` fails, as on a python3 without the package."""
    with mock.patch.dict(sys.modules, {"opentelemetry": None, "opentelemetry.trace": None}):
        yield


class TraceparentTest(unittest.TestCase):
    def serve(self, **options) -> DriverServer:
        server = DriverServer("gpu.example.com", "127.0.0.1:0", **options)
        self.addCleanup(server.stop)
        server.start()
        channel = grpc.insecure_channel(server.endpoint)
        self.addCleanup(channel.close)
        self.publisher = pb_grpc.ResourcePublisherStub(channel)
        return server

    def watch(self, node: str = "node-a"):
        call = self.publisher.WatchResources(pb.WatchResourcesRequest(node_name=node), timeout=TIMEOUT)
        self.addCleanup(call.cancel)
        return call

    def test_sends_an_explicit_traceparent_and_again_to_a_stream_opened_later(self) -> None:
        server = self.serve(inventory=gpus(1))
        first = self.watch()
        self.assertEqual(next(first).traceparent, "")
        server.publish(gpus(2), traceparent=GIVEN)
        self.assertEqual(next(first).traceparent, GIVEN)
        first.cancel()
        again = next(self.watch())
        self.assertEqual((len(again.pools[0].devices), again.traceparent), (2, GIVEN))
        server.publish(gpus(3), traceparent="")
        self.assertEqual(next(self.watch()).traceparent, "")

    def test_refuses_an_explicit_traceparent_that_is_not_one_naming_the_argument_and_rule(self) -> None:
        cases = [
            ("uppercase", GIVEN.upper()),
            ("version-ff", "ff" + GIVEN[2:]),
            ("zero-trace-id", f"00-{'0' * 32}-00f067aa0ba902b7-01"),
            ("zero-span-id", f"00-4bf92f3577b34da6a3ce929d0e0e4736-{'0' * 16}-01"),
            ("trace-id-only", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ]
        server = self.serve(inventory=gpus(1))
        for name, traceparent in cases:
            with self.subTest(name):
                with self.assertRaises(InvalidInventoryError) as raised:
                    server.publish(gpus(2), traceparent=traceparent)
                self.assertEqual(str(raised.exception), f"traceparent: {RULE} (is {traceparent!r})")
        with self.assertRaisesRegex(InvalidInventoryError, r"^traceparent: must be a string \(is bytes\)$"):
            server.publish(gpus(2), traceparent=GIVEN.encode())  # type: ignore[arg-type]
        self.assertEqual(len(next(self.watch()).pools[0].devices), 1)

    def test_sends_the_current_opentelemetry_span_when_the_package_is_there(self) -> None:
        server = self.serve()
        stream = self.watch()
        span = _SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, 1)
        with opentelemetry_current_span(span):
            server.publish(gpus(1))
        self.assertEqual(next(stream).traceparent, GIVEN)
        with opentelemetry_current_span(None):
            server.publish(gpus(2))
        self.assertEqual(next(stream).traceparent, "")
        with opentelemetry_current_span(span):
            server.publish(gpus(3), traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
        self.assertEqual(next(stream).traceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")

    def test_sends_the_span_current_when_the_server_is_created_with_its_inventory(self) -> None:
        with opentelemetry_current_span(_SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, 1)):
            self.serve(inventory=gpus(1))
        self.assertEqual(next(self.watch()).traceparent, GIVEN)

    def test_sends_none_without_opentelemetry(self) -> None:
        server = self.serve()
        stream = self.watch()
        with opentelemetry_missing():
            server.publish(gpus(1))
            self.assertEqual(next(stream).traceparent, "")
            server.set_device_health("gpu-0", None, traceparent=GIVEN)
            self.assertEqual(next(stream).traceparent, GIVEN)


if __name__ == "__main__":
    unittest.main()
