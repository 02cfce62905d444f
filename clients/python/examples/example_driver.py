#!/usr/bin/python3
"""A fake GPU driver on slicekeeper's Python driver SDK: the Python twin of apps/example-driver.

It serves N GPUs of one node on a unix socket, registers with the registration API, and logs
what slicekeeper made of its inventory. To change the inventory, write a new GPU count into
the --gpus-file and send SIGHUP. SIGTERM (or Ctrl-C) deregisters and stops. Logs are JSON lines
on stdout.

    PYTHONPATH=clients/python /usr/bin/python3 clients/python/examples/example_driver.py \\
        --node node-a --endpoint unix:///run/slicekeeper/gpu.example.com.sock \\
        --registration-api-url http://127.0.0.1:8080 --token-file /etc/slicekeeper/token

Every option can be given in the environment instead (NODE_NAME, DRIVER_NAME, ENDPOINT,
REGISTRATION_API_URL, REGISTRATION_TOKEN_FILE, GPUS, GPUS_FILE).
"""

import argparse
import json
import logging
import os
import signal
import sys

# The SDK is one directory up; an installed copy works as well.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from slicekeeper_driver import (  # noqa: E402
    Device,
    DriverServer,
    Inventory,
    PluginIdentity,
    Pool,
    PublishFeedback,
    RegistrationClient,
    RegistrationError,
    Version,
)

log = logging.getLogger("example-driver")


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
    parser.add_argument("--node", default=env_or("NODE_NAME"), required=env_or("NODE_NAME") is None)
    parser.add_argument("--driver", default=env_or("DRIVER_NAME", "gpu.example.com"))
    parser.add_argument("--endpoint", default=env_or("ENDPOINT", "unix:///tmp/slicekeeper/gpu.example.com.sock"))
    parser.add_argument("--registration-api-url", default=env_or("REGISTRATION_API_URL"), help="unset: no registration")
    parser.add_argument("--token-file", default=env_or("REGISTRATION_TOKEN_FILE"), help="bearer token for the API")
    parser.add_argument("--gpus", type=int, default=int(env_or("GPUS", "4")))
    parser.add_argument("--gpus-file", default=env_or("GPUS_FILE"), help="holds the GPU count; re-read on SIGHUP")
    return parser.parse_args()


def gpu_count(args: argparse.Namespace) -> int:
    if args.gpus_file is None:
        return args.gpus
    with open(args.gpus_file, encoding="utf-8") as file:
        return int(file.read().strip())


def main() -> int:
    args = parse_args()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    # Block the signals before any thread starts (gRPC's threads inherit the mask), then take
    # them one by one with sigwait below: no handler runs in the middle of the SDK's code.
    signals = {signal.SIGHUP, signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)

    if args.endpoint.startswith("unix://"):
        os.makedirs(os.path.dirname(args.endpoint[len("unix://"):]), exist_ok=True)
    server = DriverServer(args.driver, args.endpoint, inventory=gpus(gpu_count(args)), on_feedback=on_feedback)
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
                count = gpu_count(args)
                server.publish(gpus(count))
                log.info("inventory published", extra={"fields": {"gpus": count}})
            except (OSError, ValueError) as error:
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
