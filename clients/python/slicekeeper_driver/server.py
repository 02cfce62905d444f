"""DriverServer: what a DRA driver serves to slicekeeper, as libs/driver-kit's DriverServer."""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
import threading
from concurrent import futures
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import grpc

from slicekeeper_driver._generated.pluginregistration.v1 import api_pb2, api_pb2_grpc
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2_grpc as pb_grpc
from slicekeeper_driver.feedback import PublishFeedback, RegistrationStatus
from slicekeeper_driver.inventory import Device, DeviceHealth, Inventory
from slicekeeper_driver.trace_context import current_traceparent, traceparent_problem
from slicekeeper_driver.wire import to_proto
from slicekeeper_driver.validation import (
    FieldProblem,
    InvalidInventoryError,
    driver_name_problem,
    validate_inventory,
)

#: The plugin type a DRA driver reports in GetInfo (kubelet's plugin registration).
DRA_PLUGIN_TYPE = "DRAPlugin"
#: The ResourcePublisher versions this SDK serves.
SUPPORTED_VERSIONS = ("v1.ResourcePublisher",)

FeedbackHandler = Callable[[PublishFeedback], None]
RegistrationStatusHandler = Callable[[RegistrationStatus], None]


class _Stream:
    """One open WatchResources stream: the next message to send, or why to stop."""

    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        self.pending: Optional[pb.DriverResources] = None
        #: None while open; "end" (EOF), "fail" (UNAVAILABLE) or "gone" (the client left).
        self.closing: Optional[str] = None


class DriverServer:
    """Serves kubelet's plugin registration (``GetInfo``, ``NotifyRegistrationStatus``) and
    ``slicekeeper.v1.ResourcePublisher`` (``WatchResources``, ``NotifyPublishStatus``) on one
    unix socket or TCP port.

    The driver pushes complete inventories with :meth:`publish`; every open stream (and every
    stream opened later) gets the latest one for its node. When several inventories are
    published faster than a stream sends them, the stream sends only the latest: each one
    replaces the previous anyway. What slicekeeper made of them comes back through
    ``on_feedback``. Thread-safe; the callbacks run on gRPC's worker threads.

    Each open stream holds one worker thread for as long as it is open: slicekeeper keeps one
    per (node, driver), two briefly while it reconnects.
    """

    def __init__(
        self,
        driver_name: str,
        endpoint: Optional[str] = None,
        *,
        registration_directory: Optional[str] = None,
        inventory: Optional[Inventory] = None,
        supported_versions: Sequence[str] = SUPPORTED_VERSIONS,
        on_feedback: Optional[FeedbackHandler] = None,
        on_registration_status: Optional[RegistrationStatusHandler] = None,
        serve_publish_status: bool = True,
        report_once: bool = False,
        logger: Optional[logging.Logger] = None,
        max_workers: int = 16,
    ) -> None:
        """
        Args:
            driver_name: The DRA driver name GetInfo reports, e.g. ``gpu.example.com``.
            endpoint: Where to listen: ``unix:///absolute/path.sock`` (a stale socket is
                replaced; the directory must exist) or ``host:port``, port 0 picking a free one.
                Exactly one of ``endpoint`` and ``registration_directory``.
            registration_directory: Discovery mode: serve on
                ``<registration_directory>/<driver_name>.sock`` (the directory is created when
                missing) and nothing else. The node-mode plugin-watcher (or kubelet, when this
                is its ``plugins_registry``) finds the socket, asks GetInfo, registers the driver
                with its own identity and tells it the outcome (``on_registration_status``);
                when the socket goes (:meth:`stop`) the plugin is deregistered. The driver needs
                no token and makes no registration call.
            inventory: The inventory to serve from the start; streams wait for :meth:`publish`
                when ``None``. It carries the traceparent of the OpenTelemetry span current
                when the server is created, as :meth:`publish` does.
            supported_versions: ResourcePublisher versions GetInfo reports.
            on_feedback: Called with each publish feedback (after each change of the outcome).
                The call is answered whatever the callback does; an exception is logged.
            on_registration_status: Called with what NotifyRegistrationStatus says.
            serve_publish_status: False answers NotifyPublishStatus with Unimplemented, as a
                driver written before the RPC existed (slicekeeper stops asking).
            report_once: Send the inventory once per stream, then end it (EOF).
            logger: Where to log; every record carries its fields as ``record.fields`` (a dict).
                Default: the ``slicekeeper_driver`` logger.
            max_workers: gRPC worker threads: open streams plus concurrent calls.

        Raises:
            InvalidInventoryError: naming the setting and the rule broken.
        """
        problems: List[FieldProblem] = []
        name_problem = driver_name_problem(driver_name)
        if name_problem is not None:
            problems.append(FieldProblem("driver_name", name_problem))
        self._registration_directory = registration_directory
        endpoint = _listen_endpoint(driver_name, endpoint, registration_directory, problems)
        self._listen = _parse_endpoint(endpoint, problems)
        if inventory is not None:
            problems += validate_inventory(inventory)
        if problems:
            raise InvalidInventoryError(problems)
        self._driver_name = driver_name
        self._endpoint_option = endpoint
        self._supported_versions = list(supported_versions)
        self._on_feedback = on_feedback
        self._on_registration_status = on_registration_status
        self._serve_publish_status = serve_publish_status
        self._report_once = report_once
        self._log = logger or logging.getLogger("slicekeeper_driver")
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
        api_pb2_grpc.add_RegistrationServicer_to_server(_Registration(self), self._server)
        pb_grpc.add_ResourcePublisherServicer_to_server(_Publisher(self), self._server)
        # One condition guards all the state below; streams wait on it for their next message.
        # Reentrant, so that set_device_health's read-modify-write can publish under it.
        self._changed = threading.Condition(threading.RLock())
        self._streams: Set[_Stream] = set()
        self._inventory = inventory
        self._fallback = None if inventory is None else _message(inventory, current_traceparent())
        self._by_node: Dict[str, pb.DriverResources] = {}
        self._calls = 0
        self._bound: Optional[str] = None
        self._stopped = False
        self._registration_status: Optional[RegistrationStatus] = None
        self._last_feedback: Optional[PublishFeedback] = None

    # Lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        """Listens; returns the endpoint to register (``unix:///…`` or ``host:port``).
        Idempotent: a second call returns the same endpoint.

        Raises:
            RuntimeError: when stopped already, or the endpoint cannot be bound.
        """
        with self._changed:
            if self._stopped:
                raise RuntimeError("DriverServer stopped; create a new one")
            if self._bound is not None:
                return self._bound
            kind, where = self._listen
            if self._registration_directory is not None:
                os.makedirs(self._registration_directory, exist_ok=True)
            if kind == "unix":
                _remove_stale_socket(where)
            target = f"unix://{where}" if kind == "unix" else where
            try:
                port = self._server.add_insecure_port(target)
            except RuntimeError as error:
                raise RuntimeError(f"endpoint {self._endpoint_option!r}: cannot listen: {error}") from error
            if port == 0:
                raise RuntimeError(f"endpoint {self._endpoint_option!r}: cannot listen")
            self._server.start()
            if kind == "unix":
                self._bound = self._endpoint_option
            else:
                self._bound = f"{where.rpartition(':')[0]}:{port}"
        self._info("serving", endpoint=self._bound)
        return self._bound

    def stop(self, grace: Optional[float] = None) -> None:
        """Stops serving and removes the socket file; open streams fail (UNAVAILABLE), as
        driver-kit's ``close()``. Idempotent.

        Args:
            grace: Seconds to let calls in flight finish; ``None``: none.
        """
        with self._changed:
            if self._stopped:
                return
            self._stopped = True
            for stream in self._streams:
                stream.closing = "fail"
            self._streams.clear()
            self._changed.notify_all()
        self._server.stop(grace).wait()
        kind, where = self._listen
        if kind == "unix" and self._bound is not None:
            _remove_stale_socket(where)
        self._info("stopped")

    def __enter__(self) -> DriverServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # Publishing ----------------------------------------------------------------------------

    def publish(self, inventory: Inventory, node_name: Optional[str] = None, *, traceparent: Optional[str] = None) -> None:
        """Replaces the inventory: of one node when ``node_name`` is given (a server can stand
        in for the plugins of several nodes), else of every node without its own. Every
        affected open stream sends it at once.

        Args:
            traceparent: The W3C traceparent the message carries
                (``00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01``): slicekeeper's
                trace of this change becomes a child of that span. ``""`` sends none. ``None``
                (the default): the current OpenTelemetry span's, when the ``opentelemetry``
                package is installed and a valid span is current; none otherwise. It is taken
                now and kept with this inventory: a stream opened later (a reconnect) is sent
                the same one.

        Raises:
            InvalidInventoryError: naming each field and rule broken (``traceparent`` too);
                nothing is sent.
        """
        problems = validate_inventory(inventory)
        if traceparent is not None:
            problem = traceparent_problem(traceparent)
            if problem is not None:
                problems.append(FieldProblem("traceparent", problem))
        if problems:
            raise InvalidInventoryError(problems)
        message = _message(inventory, current_traceparent() if traceparent is None else traceparent)
        with self._changed:
            if node_name is None:
                self._inventory = inventory
                self._fallback = message
            else:
                self._by_node[node_name] = message
            for stream in self._streams:
                # A node with an inventory of its own keeps it when the shared one changes.
                affected = stream.node_name == node_name if node_name is not None else stream.node_name not in self._by_node
                if affected:
                    stream.pending = message
            self._changed.notify_all()

    def set_device_health(
        self, device: str, health: Optional[DeviceHealth], pool: Optional[str] = None, *, traceparent: Optional[str] = None
    ) -> None:
        """Sets the health of a device of the current inventory (every device of that name,
        or the one of ``pool``) and publishes the result: what a driver's health check calls.
        ``traceparent`` as in :meth:`publish`.

        Raises:
            KeyError: no device of that name in the current inventory.
        """
        with self._changed:
            current = self._inventory
            if current is None:
                raise KeyError(f"device {device!r}: no inventory published yet")
            found = False

            def with_health(pool_name: str, devices: Sequence[Device]) -> Tuple[Device, ...]:
                nonlocal found
                updated = []
                for d in devices:
                    if d.name == device and (pool is None or pool_name == pool):
                        d = dataclasses.replace(d, health=health)
                        found = True
                    updated.append(d)
                return tuple(updated)

            pools = []
            for p in current.pools:
                slices = None
                if p.slices is not None:
                    slices = tuple(dataclasses.replace(s, devices=with_health(p.name, s.devices)) for s in p.slices)
                pools.append(dataclasses.replace(p, devices=with_health(p.name, p.devices), slices=slices))
            if not found:
                raise KeyError(f"device {device!r}: not in the inventory" + ("" if pool is None else f" of pool {pool!r}"))
            self.publish(Inventory(pools=tuple(pools)), traceparent=traceparent)

    def end_streams(self) -> None:
        """Ends every open stream cleanly (EOF): slicekeeper keeps the last inventory."""
        with self._changed:
            for stream in self._streams:
                stream.closing = "end"
            self._streams.clear()
            self._changed.notify_all()

    # State ---------------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The endpoint being served, once started."""
        if self._bound is None:
            raise RuntimeError("DriverServer not started")
        return self._bound

    @property
    def inventory(self) -> Optional[Inventory]:
        """The inventory last published for every node (not a per-node one)."""
        return self._inventory

    @property
    def open_streams(self) -> int:
        """Open WatchResources streams."""
        with self._changed:
            return len(self._streams)

    @property
    def watch_calls(self) -> int:
        """WatchResources calls received since start (each connect or reconnect is one)."""
        return self._calls

    @property
    def registration_status(self) -> Optional[RegistrationStatus]:
        """What the last NotifyRegistrationStatus said."""
        return self._registration_status

    @property
    def last_feedback(self) -> Optional[PublishFeedback]:
        """What the last NotifyPublishStatus said, once slicekeeper has called it."""
        return self._last_feedback

    # Calls ---------------------------------------------------------------------------------

    def _info(self, message: str, **fields: object) -> None:
        self._log.info(message, extra={"fields": fields})

    def _watch(self, request: pb.WatchResourcesRequest, context: grpc.ServicerContext) -> Iterator[pb.DriverResources]:
        stream = _Stream(request.node_name)

        def gone() -> None:
            with self._changed:
                if stream.closing is None:
                    stream.closing = "gone"
                self._streams.discard(stream)
                self._changed.notify_all()

        with self._changed:
            self._calls += 1
            if self._stopped:
                context.abort(grpc.StatusCode.UNAVAILABLE, "driver stopping")
            stream.pending = self._by_node.get(stream.node_name, self._fallback)
            self._streams.add(stream)
        context.add_callback(gone)
        while True:
            with self._changed:
                while stream.pending is None and stream.closing is None:
                    self._changed.wait()
                message, stream.pending = stream.pending, None
                closing = stream.closing
            if closing == "fail":
                context.abort(grpc.StatusCode.UNAVAILABLE, "driver stopping")
            if closing is not None:
                return
            if message is not None:
                yield message
            if self._report_once:
                gone()
                return

    def _notify_registration_status(self, request: api_pb2.RegistrationStatus) -> None:
        status = RegistrationStatus.from_proto(request)
        self._registration_status = status
        self._info("registration status", plugin_registered=status.plugin_registered, error=status.error)
        if self._on_registration_status is not None:
            try:
                self._on_registration_status(status)
            except Exception:
                self._log.exception("registration status handler failed")

    def _notify_publish_status(self, request: pb.NotifyPublishStatusRequest, context: grpc.ServicerContext) -> None:
        if not self._serve_publish_status:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "NotifyPublishStatus not served")
        try:
            feedback = PublishFeedback.from_proto(request)
        except ValueError as error:
            self._log.warning("publish feedback refused", extra={"fields": {"error": str(error)}})
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        self._last_feedback = feedback
        self._info(
            "publish feedback",
            node=feedback.node_name,
            outcome=feedback.outcome,
            snapshot_generation=feedback.snapshot_generation,
            problems=[str(p) for p in feedback.problems],
            dropped_fields=list(feedback.dropped_fields),
            slices=list(feedback.slice_names),
            error=feedback.error,
        )
        if self._on_feedback is not None:
            try:
                self._on_feedback(feedback)
            except Exception:
                self._log.exception("feedback handler failed")


class _Registration(api_pb2_grpc.RegistrationServicer):
    def __init__(self, server: DriverServer) -> None:
        self._server = server

    def GetInfo(self, request: api_pb2.InfoRequest, context: grpc.ServicerContext) -> api_pb2.PluginInfo:
        return api_pb2.PluginInfo(
            type=DRA_PLUGIN_TYPE,
            name=self._server._driver_name,
            endpoint="",
            supported_versions=self._server._supported_versions,
        )

    def NotifyRegistrationStatus(
        self, request: api_pb2.RegistrationStatus, context: grpc.ServicerContext
    ) -> api_pb2.RegistrationStatusResponse:
        self._server._notify_registration_status(request)
        return api_pb2.RegistrationStatusResponse()


class _Publisher(pb_grpc.ResourcePublisherServicer):
    def __init__(self, server: DriverServer) -> None:
        self._server = server

    def WatchResources(self, request: pb.WatchResourcesRequest, context: grpc.ServicerContext) -> Iterator[pb.DriverResources]:
        return self._server._watch(request, context)

    def NotifyPublishStatus(
        self, request: pb.NotifyPublishStatusRequest, context: grpc.ServicerContext
    ) -> pb.NotifyPublishStatusResponse:
        self._server._notify_publish_status(request, context)
        return pb.NotifyPublishStatusResponse()


def _message(inventory: Inventory, traceparent: str) -> pb.DriverResources:
    message = to_proto(inventory)
    message.traceparent = traceparent
    return message


def _listen_endpoint(
    driver_name: str,
    endpoint: Optional[str],
    registration_directory: Optional[str],
    problems: List[FieldProblem],
) -> str:
    """The endpoint to listen on: ``endpoint``, or the driver's socket in the registration
    directory (``<driver_name>.sock``, kubelet's one socket per driver in ``plugins_registry``).
    Appends to ``problems`` unless exactly one is given."""
    if endpoint is not None and registration_directory is not None:
        problems.append(FieldProblem("endpoint", "set endpoint or registration_directory, not both"))
        return endpoint
    if registration_directory is not None:
        if not isinstance(registration_directory, str) or not registration_directory.startswith("/"):
            problems.append(FieldProblem("registration_directory", f"must be an absolute path (is {registration_directory!r})"))
            return "unix:///"
        return f"unix://{os.path.join(registration_directory, f'{driver_name}.sock')}"
    if endpoint is None:
        problems.append(FieldProblem("endpoint", "required unless registration_directory is set"))
        return "unix:///"
    return endpoint


def _parse_endpoint(endpoint: str, problems: List[FieldProblem]) -> Tuple[str, str]:
    """("unix", path) or ("tcp", "host:port"); appends to ``problems`` when it is neither."""
    if not isinstance(endpoint, str):
        problems.append(FieldProblem("endpoint", "must be a string"))
        return ("tcp", "")
    if endpoint.startswith("unix://"):
        path = endpoint[len("unix://"):]
        if not path.startswith("/"):
            problems.append(FieldProblem("endpoint", f"must be unix:///absolute/path.sock (is {endpoint!r})"))
        return ("unix", path)
    host, _, port = endpoint.rpartition(":")
    if host == "" or not port.isdigit() or int(port) > 65535:
        problems.append(
            FieldProblem("endpoint", f"must be unix:///absolute/path.sock or host:port with a port within 0 and 65535 (is {endpoint!r})")
        )
    return ("tcp", endpoint)


def _remove_stale_socket(path: str) -> None:
    """Removes the socket a crashed driver left behind; refuses to remove anything else."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise RuntimeError(f"endpoint unix://{path}: exists and is not a socket")
    os.unlink(path)
