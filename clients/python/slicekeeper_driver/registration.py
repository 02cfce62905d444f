"""A client of slicekeeper's registration API, on the standard library (urllib).

What kubelet's plugin watcher does when a plugin socket appears or goes: ``POST /v1/plugins``
(the API probes the plugin with GetInfo before it answers) and
``DELETE /v1/plugins/{node}/{driver}?endpoint=``. Mirrors apps/example-driver's
registration-client.ts.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class PluginIdentity:
    """A plugin as the registration API knows it.

    Attributes:
        node: The node the driver runs on (empty for a cluster-scoped plugin).
        driver: The DRA driver name, as GetInfo reports it.
        endpoint: The endpoint slicekeeper's plugin-watcher dials (what
            :meth:`DriverServer.start` returned, or the address it reaches the driver by).
    """

    node: str
    driver: str
    endpoint: str


class RegistrationError(Exception):
    """A failed registration request.

    Attributes:
        retryable: The API may answer later (not reachable yet, 5xx, 429).
        status: The HTTP status, when the API answered.
    """

    def __init__(self, message: str, retryable: bool, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class RegistrationClient:
    """Registers and deregisters a plugin with the registration API."""

    def __init__(
        self,
        base_url: str,
        *,
        token: Optional[str] = None,
        ca_file: Optional[str] = None,
        timeout: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """
        Args:
            base_url: e.g. ``https://registration-api.slicekeeper.svc:8080`` (plain ``http://``
                only for ``npm start`` and compose: the token would cross the network in clear).
            token: Bearer token: one bound to the driver's node, an admin token, or the pod's
                projected ServiceAccount token (audience ``slicekeeper``).
            ca_file: PEM file of the CA(s) an ``https://`` API's certificate must chain to,
                instead of the system's roots; read at every request, so that a rotated CA
                bundle is used without a restart.
            timeout: Bound on each request, seconds.
            sleep, clock: Injected for tests of :meth:`register_until_accepted`.
        """
        self._base_url = base_url
        self._token = token
        self._ca_file = ca_file
        self._timeout = timeout
        self._sleep = sleep
        self._clock = clock

    def register(self, plugin: PluginIdentity) -> None:
        """Registers the plugin once.

        Raises:
            RegistrationError: the API refused (with its answer) or could not be reached.
        """
        self._request("POST", "/v1/plugins", asdict(plugin))

    def register_until_accepted(self, plugin: PluginIdentity, timeout: float = 30.0) -> None:
        """Registers, retrying with backoff (0.25 s doubling to 2 s) while the API is not
        reachable yet or answers 5xx/429, for at most ``timeout`` seconds, as a kubelet plugin
        does; a refusal (4xx) fails at once.

        Raises:
            RegistrationError: the last failure.
        """
        deadline = self._clock() + timeout
        delay = 0.25
        while True:
            try:
                self.register(plugin)
                return
            except RegistrationError as error:
                if not error.retryable or self._clock() + delay > deadline:
                    raise
            self._sleep(delay)
            delay = min(delay * 2, 2.0)

    def deregister(self, plugin: PluginIdentity, grace: Optional[str] = None) -> None:
        """Removes this endpoint's registration, so that the plugin's slices are withdrawn
        after the API's removal grace (``grace``, e.g. ``"0s"``, overrides it). A plugin that
        registers again within the grace keeps its slices untouched. Unknown plugins are fine.

        Raises:
            RegistrationError: the API refused or could not be reached.
        """
        query = {"endpoint": plugin.endpoint}
        if grace is not None:
            query["grace"] = grace
        path = (
            f"/v1/plugins/{urllib.parse.quote(plugin.node, safe='')}/"
            f"{urllib.parse.quote(plugin.driver, safe='')}?{urllib.parse.urlencode(query)}"
        )
        self._request("DELETE", path)

    def _request(self, method: str, path: str, body: Optional[dict] = None) -> None:
        url = urllib.parse.urljoin(self._base_url, path)
        headers = {}
        if self._token is not None:
            headers["authorization"] = f"Bearer {self._token}"
        data = None
        if body is not None:
            headers["content-type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        where = f"{method} {urllib.parse.urlsplit(url).path}"
        try:
            # Without a CA file, urllib verifies against the system's roots as usual; an
            # unreadable one fails as an unreachable API does (OSError below).
            context = (
                None if self._ca_file is None else ssl.create_default_context(cafile=self._ca_file)
            )
            with urllib.request.urlopen(request, timeout=self._timeout, context=context):
                return
        except urllib.error.HTTPError as error:
            if method == "DELETE" and error.code == 404:
                return
            answer = error.read().decode(errors="replace")
            raise RegistrationError(
                f"{where}: {error.code} {answer}",
                retryable=error.code == 429 or error.code >= 500,
                status=error.code,
            ) from error
        except (urllib.error.URLError, OSError) as error:
            raise RegistrationError(f"{where}: {error}", retryable=True) from error
