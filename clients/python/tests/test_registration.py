"""RegistrationClient against a stand-in registration API (the standard library's HTTP server)."""

import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Tuple

from slicekeeper_driver import PluginIdentity, RegistrationClient, RegistrationError

PLUGIN = PluginIdentity(node="node-a", driver="gpu.example.com", endpoint="unix:///run/sk/gpu.sock")


class FakeApi:
    """Answers each request with the next of ``answers`` (status, body); records the requests."""

    def __init__(self, answers: List[Tuple[int, str]]) -> None:
        self.answers = answers
        self.requests: List[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                api.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": self.headers.get("authorization"),
                        "body": json.loads(self.rfile.read(length)) if length else None,
                    }
                )
                status, body = api.answers.pop(0)
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            do_POST = do_DELETE = answer

            def log_message(self, *_: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        # A short poll interval: shutdown() waits for the serving loop to see it.
        threading.Thread(target=self.http.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


class FakeTime:
    """An injected clock that advances only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: List[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class RegistrationClientTest(unittest.TestCase):
    def api(self, *answers: Tuple[int, str]) -> FakeApi:
        api = FakeApi(list(answers))
        self.addCleanup(api.close)
        return api

    def test_registers_with_the_node_token(self) -> None:
        api = self.api((201, "{}"))
        RegistrationClient(api.url, token="node-token").register(PLUGIN)
        self.assertEqual(
            api.requests,
            [
                {
                    "method": "POST",
                    "path": "/v1/plugins",
                    "authorization": "Bearer node-token",
                    "body": {"node": "node-a", "driver": "gpu.example.com", "endpoint": "unix:///run/sk/gpu.sock"},
                }
            ],
        )

    def test_a_refusal_is_not_retried_and_says_why(self) -> None:
        api = self.api((403, '{"message":"token not bound to node-a"}'))
        time = FakeTime()
        client = RegistrationClient(api.url, sleep=time.sleep, clock=lambda: time.now)
        with self.assertRaises(RegistrationError) as raised:
            client.register_until_accepted(PLUGIN)
        self.assertFalse(raised.exception.retryable)
        self.assertEqual(raised.exception.status, 403)
        self.assertIn("POST /v1/plugins: 403", str(raised.exception))
        self.assertIn("token not bound to node-a", str(raised.exception))
        self.assertEqual(time.slept, [])

    def test_retries_with_backoff_while_the_api_is_unavailable(self) -> None:
        api = self.api((503, "starting"), (429, "slow down"), (503, "starting"), (201, "{}"))
        time = FakeTime()
        client = RegistrationClient(api.url, sleep=time.sleep, clock=lambda: time.now)
        client.register_until_accepted(PLUGIN)
        self.assertEqual(time.slept, [0.25, 0.5, 1.0])
        self.assertEqual(len(api.requests), 4)

    def test_gives_up_after_the_timeout_with_the_last_failure(self) -> None:
        api = self.api(*[(503, "down")] * 10)
        time = FakeTime()
        client = RegistrationClient(api.url, sleep=time.sleep, clock=lambda: time.now)
        with self.assertRaisesRegex(RegistrationError, "503 down"):
            client.register_until_accepted(PLUGIN, timeout=2.0)
        self.assertEqual(time.slept, [0.25, 0.5, 1.0])

    def test_an_unreachable_api_is_retryable(self) -> None:
        api = self.api()
        api.close()
        with self.assertRaises(RegistrationError) as raised:
            RegistrationClient(api.url).register(PLUGIN)
        self.assertTrue(raised.exception.retryable)
        self.assertIsNone(raised.exception.status)

    def test_deregisters_the_endpoint_and_an_unknown_plugin_is_fine(self) -> None:
        api = self.api((204, ""), (404, "not found"))
        client = RegistrationClient(api.url, token="t")
        client.deregister(PLUGIN, grace="0s")
        client.deregister(PLUGIN)
        self.assertEqual(
            [r["path"] for r in api.requests],
            [
                "/v1/plugins/node-a/gpu.example.com?endpoint=unix%3A%2F%2F%2Frun%2Fsk%2Fgpu.sock&grace=0s",
                "/v1/plugins/node-a/gpu.example.com?endpoint=unix%3A%2F%2F%2Frun%2Fsk%2Fgpu.sock",
            ],
        )
        self.assertEqual({r["method"] for r in api.requests}, {"DELETE"})


if __name__ == "__main__":
    unittest.main()
