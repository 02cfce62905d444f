#!/usr/bin/python3
"""A fake DRA driver on slicekeeper's Python driver SDK: the Python twin of apps/example-driver.

It serves one of the example driver's device profiles on a unix socket, registers with the
registration API, and logs what slicekeeper made of its inventory. The profiles are the files
apps/example-driver's PROFILE reads (apps/example-driver/inventory/profiles/<profile>.json), so
both drivers publish the same inventories: gpu (8 GPUs, the default), partitionable-gpu (shared
counters and MIG-like partitions), nic (bandwidth as consumable capacity) and fabric (a
cluster-level pool with per-device node selection and binding conditions; run it with
``--node ''``, the cluster-scoped key). SIGHUP re-reads the profile's file.

Instead of a profile, --gpus N (or --gpus-file, holding N; re-read on SIGHUP) publishes N
generated GPUs. SIGTERM (or Ctrl-C) deregisters and stops. Logs are JSON lines on stdout.

    PYTHONPATH=clients/python /usr/bin/python3 clients/python/examples/example_driver.py \\
        --node node-a --profile nic --endpoint unix:///run/slicekeeper/gpu.example.com.sock \\
        --registration-api-url http://127.0.0.1:8080 --token-file /etc/slicekeeper/token

With --registration-dir (REGISTRATION_DIR) it serves on <driver>.sock in that directory instead
and registers nothing itself: the node-mode plugin-watcher discovers the socket, registers it with
its own identity, and deregisters it when the socket goes (discovery mode; no token needed).

Every option can be given in the environment instead (NODE_NAME, DRIVER_NAME, ENDPOINT,
REGISTRATION_DIR, REGISTRATION_API_URL, REGISTRATION_TOKEN_FILE, PROFILE, GPUS, GPUS_FILE).
"""

import argparse
import json
import logging
import os
import signal
import sys
from datetime import datetime

# The SDK is one directory up; an installed copy works as well.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from slicekeeper_driver import (  # noqa: E402
    Capacity,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CounterSet,
    Device,
    DeviceCounterConsumption,
    DeviceHealth,
    DeviceTaint,
    DriverServer,
    HealthStatus,
    Inventory,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PluginIdentity,
    Pool,
    PublishFeedback,
    RegistrationClient,
    RegistrationError,
    Slice,
    Version,
)

log = logging.getLogger("example-driver")

#: The example driver's profiles: its files, which apps/example-driver's PROFILE reads too.
PROFILES_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "apps", "example-driver", "inventory", "profiles"
)
PROFILES = sorted(name[: -len(".json")] for name in os.listdir(PROFILES_DIR) if name.endswith(".json"))


def gpus(count: int) -> Inventory:
    """``count`` GPUs in one node-local pool named after the node (``name=""``)."""
    return Inventory(
        pools=[
            Pool(
                devices=[
                    Device(
                        name=f"gpu-{i}",
                        attributes={
                            "model": "H100-SXM5-80GB",
                            "uuid": f"GPU-6f1c2a4e-8d3b-4c5a-9e7f-{i:012d}",
                            "index": i,
                            "driverVersion": Version("550.54.15"),
                        },
                        capacity={"memory": "80Gi"},
                    )
                    for i in range(count)
                ]
            )
        ]
    )


def profile_inventory(profile: str) -> Inventory:
    """The profile's inventory file, in slicekeeper's DriverInventory JSON shape, as SDK objects."""
    with open(os.path.join(PROFILES_DIR, f"{profile}.json"), encoding="utf-8") as file:
        return inventory_from_json(json.load(file))


def inventory_from_json(document: dict) -> Inventory:
    """slicekeeper's ``DriverInventory`` JSON (libs/contracts/src/inventory.ts) as SDK objects."""
    return Inventory(pools=[pool_from_json(pool) for pool in document["pools"]])


def pool_from_json(pool: dict) -> Pool:
    scope = pool["scope"]
    slices = pool.get("slices")
    return Pool(
        name=pool["name"],
        scope=node_selector_from_json(scope["nodeSelector"]) if scope["kind"] == "node-selector" else scope["kind"],
        generation=pool.get("generation"),
        devices=[device_from_json(device) for device in pool["devices"]],
        slices=None
        if slices is None
        else [
            Slice(
                devices=[device_from_json(device) for device in s["devices"]],
                shared_counters=counter_sets_from_json(s.get("sharedCounters", [])),
            )
            for s in slices
        ],
        shared_counters=counter_sets_from_json(pool.get("sharedCounters", [])),
        pass_through=pool.get("passThrough"),
    )


def counter_sets_from_json(sets: list) -> list:
    return [CounterSet(name=s["name"], counters=quantities(s["counters"])) for s in sets]


def quantities(counters: dict) -> dict:
    return {name: counter["value"] for name, counter in counters.items()}


def node_selector_from_json(selector: dict) -> NodeSelector:
    def requirements(entries: list) -> list:
        return [NodeSelectorRequirement(e["key"], e["operator"], tuple(e.get("values", ()))) for e in entries]

    return NodeSelector(
        terms=[
            NodeSelectorTerm(
                match_expressions=requirements(term.get("matchExpressions", [])),
                match_fields=requirements(term.get("matchFields", [])),
            )
            for term in selector["nodeSelectorTerms"]
        ]
    )


def attribute_from_json(attribute: dict):
    """One of ``int``, ``bool``, ``string``, ``version`` or their list forms."""
    (kind, value), = attribute.items()
    if kind == "version":
        return Version(value)
    if kind == "versions":
        return [Version(v) for v in value]
    return value


def capacity_from_json(capacity: dict):
    policy = capacity.get("requestPolicy")
    if policy is None:
        return capacity["value"]
    valid_range = policy.get("validRange")
    return Capacity(
        value=capacity["value"],
        request_policy=CapacityRequestPolicy(
            default=policy.get("default"),
            valid_values=tuple(policy.get("validValues", ())),
            valid_range=None
            if valid_range is None
            else CapacityRequestPolicyRange(valid_range["min"], valid_range.get("max"), valid_range.get("step")),
        ),
    )


def taint_from_json(taint: dict) -> DeviceTaint:
    added = taint.get("timeAdded")
    return DeviceTaint(
        key=taint["key"],
        effect=taint["effect"],
        value=taint.get("value", ""),
        # RFC 3339; Python before 3.11 does not read a "Z".
        time_added=None if added is None else datetime.fromisoformat(added.replace("Z", "+00:00")),
    )


def device_from_json(device: dict) -> Device:
    health = device.get("health")
    selector = device.get("nodeSelector")
    return Device(
        name=device["name"],
        attributes={name: attribute_from_json(a) for name, a in device.get("attributes", {}).items()},
        capacity={name: capacity_from_json(c) for name, c in device.get("capacity", {}).items()},
        taints=[taint_from_json(t) for t in device.get("taints", [])],
        consumes_counters=[
            DeviceCounterConsumption(counter_set=c["counterSet"], counters=quantities(c["counters"]))
            for c in device.get("consumesCounters", [])
        ],
        health=None
        if health is None
        else DeviceHealth(HealthStatus(health["status"]), health.get("message", ""), health.get("timeoutSeconds")),
        node_name=device.get("nodeName"),
        node_selector=None if selector is None else node_selector_from_json(selector),
        all_nodes=device.get("allNodes"),
        allow_multiple_allocations=device.get("allowMultipleAllocations"),
        binds_to_node=device.get("bindsToNode"),
        binding_conditions=tuple(device.get("bindingConditions", ())),
        binding_failure_conditions=tuple(device.get("bindingFailureConditions", ())),
        pass_through=device.get("passThrough"),
    )


def on_feedback(feedback: PublishFeedback) -> None:
    """What a real driver might do: shout when slicekeeper refused its inventory."""
    if feedback.outcome == "invalid":
        for problem in feedback.problems:
            log.error("inventory refused", extra={"fields": {"problem": str(problem)}})


class JsonLines(logging.Formatter):
    """One JSON object a line: the message and the fields the SDK attaches to its records."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"level": record.levelname.lower(), "name": record.name, "msg": record.getMessage()}
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["err"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def env_or(name: str, default=None):
    return os.environ.get(name) or default


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # An empty node name is the cluster-scoped key (the fabric profile's).
    parser.add_argument("--node", default=os.environ.get("NODE_NAME"), required="NODE_NAME" not in os.environ)
    parser.add_argument("--driver", default=env_or("DRIVER_NAME", "gpu.example.com"))
    parser.add_argument("--endpoint", default=env_or("ENDPOINT", "unix:///tmp/slicekeeper/gpu.example.com.sock"))
    parser.add_argument(
        "--registration-dir",
        default=env_or("REGISTRATION_DIR"),
        help="discovery mode: serve <driver>.sock here, registered by the node-mode plugin-watcher",
    )
    parser.add_argument("--registration-api-url", default=env_or("REGISTRATION_API_URL"), help="unset: no registration")
    parser.add_argument("--token-file", default=env_or("REGISTRATION_TOKEN_FILE"), help="bearer token for the API")
    parser.add_argument("--profile", default=env_or("PROFILE", "gpu"), choices=PROFILES, help="the devices to publish")
    gpus = env_or("GPUS")
    parser.add_argument(
        "--gpus", type=int, default=None if gpus is None else int(gpus), help="N GPUs instead of a profile"
    )
    parser.add_argument("--gpus-file", default=env_or("GPUS_FILE"), help="holds the GPU count; re-read on SIGHUP")
    args = parser.parse_args()
    if args.registration_dir is not None and args.registration_api_url is not None:
        parser.error("--registration-dir and --registration-api-url: discovery registers the driver; set one")
    return args


def inventory(args: argparse.Namespace) -> tuple:
    """What to publish now, and what to log about it: the GPU count when given, else the profile."""
    if args.gpus_file is not None:
        with open(args.gpus_file, encoding="utf-8") as file:
            count = int(file.read().strip())
        return gpus(count), {"gpus": count}
    if args.gpus is not None:
        return gpus(args.gpus), {"gpus": args.gpus}
    return profile_inventory(args.profile), {"profile": args.profile}


def main() -> int:
    args = parse_args()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    # Block the signals before any thread starts (gRPC's threads inherit the mask), then take
    # them one by one with sigwait below: no handler runs in the middle of the SDK's code.
    signals = {signal.SIGHUP, signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)

    first, _ = inventory(args)
    if args.registration_dir is not None:
        server = DriverServer(
            args.driver,
            registration_directory=args.registration_dir,
            inventory=first,
            on_feedback=on_feedback,
        )
    else:
        if args.endpoint.startswith("unix://"):
            os.makedirs(os.path.dirname(args.endpoint[len("unix://"):]), exist_ok=True)
        server = DriverServer(args.driver, args.endpoint, inventory=first, on_feedback=on_feedback)
    plugin = PluginIdentity(node=args.node, driver=args.driver, endpoint=server.start())
    registration = None
    if args.registration_api_url is not None:
        token = None
        if args.token_file is not None:
            with open(args.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        registration = RegistrationClient(args.registration_api_url, token=token)
    try:
        if registration is not None:
            registration.register_until_accepted(plugin)
            log.info("registered", extra={"fields": {"node": plugin.node, "endpoint": plugin.endpoint}})
        while True:
            received = signal.sigwait(signals)
            if received != signal.SIGHUP:
                break
            try:
                latest, what = inventory(args)
                server.publish(latest)
                log.info("inventory published", extra={"fields": what})
            except (OSError, ValueError, KeyError) as error:
                log.error("inventory not reloaded, keeping the previous one", extra={"fields": {"err": str(error)}})
    finally:
        if registration is not None:
            try:
                registration.deregister(plugin)
            except RegistrationError as error:
                log.warning("deregistration failed", extra={"fields": {"err": str(error)}})
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
