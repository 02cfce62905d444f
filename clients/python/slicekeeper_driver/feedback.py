"""What slicekeeper tells the driver: its registration status and the publish feedback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from slicekeeper_driver._generated.pluginregistration.v1 import api_pb2
from slicekeeper_driver._generated.slicekeeper.v1 import resources_pb2 as pb
from slicekeeper_driver.validation import MAX_EXACT_INTEGER, FieldProblem


@dataclass(frozen=True)
class RegistrationStatus:
    """What ``NotifyRegistrationStatus`` said: whether the plugin was registered, and why not."""

    plugin_registered: bool
    error: str = ""

    @staticmethod
    def from_proto(message: api_pb2.RegistrationStatus) -> RegistrationStatus:
        return RegistrationStatus(plugin_registered=message.plugin_registered, error=message.error)


#: The outcome of each wire value, in the words of slicekeeper's sync status (as driver-kit's
#: ``PublishFeedback.outcome``).
OUTCOMES = {
    pb.PUBLISH_OUTCOME_PUBLISHED: "synced",
    pb.PUBLISH_OUTCOME_WITHDRAWN: "withdrawn",
    pb.PUBLISH_OUTCOME_REMOVING: "removing",
    pb.PUBLISH_OUTCOME_INVALID: "invalid",
    pb.PUBLISH_OUTCOME_CORRUPT: "corrupt",
    pb.PUBLISH_OUTCOME_NODE_MISSING: "node-missing",
    pb.PUBLISH_OUTCOME_FAILED: "failed",
    pb.PUBLISH_OUTCOME_RETRYING: "retrying",
}


@dataclass(frozen=True)
class PublishFeedback:
    """What slicekeeper made of the driver's inventory (``NotifyPublishStatus``): the outcome
    of the last sync of its (node, driver).

    Attributes:
        node_name: The node the outcome is for; empty for a cluster-scoped plugin.
        snapshot_generation: slicekeeper's number of the stored inventory it concerns (a higher
            number is a newer inventory); 0: none.
        outcome: ``synced`` (published), ``withdrawn``, ``removing``, ``invalid`` (see
            ``problems``), ``corrupt``, ``node-missing``, ``failed`` or ``retrying``.
        problems: Why an ``invalid`` inventory was refused, each with its field path (the
            server's paths, in DriverResources' camelCase: ``pools[0].devices[3].name``).
        dropped_fields: Fields the API server dropped (a feature gate is off).
        slice_names: The ResourceSlices that hold the driver's devices now.
        error: Why the sync did not succeed; ``None`` when it did.
    """

    node_name: str
    snapshot_generation: int
    outcome: str
    problems: Tuple[FieldProblem, ...] = ()
    dropped_fields: Tuple[str, ...] = ()
    slice_names: Tuple[str, ...] = ()
    error: Optional[str] = None

    @staticmethod
    def from_proto(request: pb.NotifyPublishStatusRequest) -> PublishFeedback:
        """The feedback a request carries.

        Raises:
            ValueError: naming each field it cannot read: an outcome that is unset or unknown,
                a snapshot generation that is negative or beyond 2^53 - 1.
        """
        problems = []
        outcome = OUTCOMES.get(request.outcome)
        if outcome is None:
            known = ", ".join(pb.PublishOutcome.Name(n) for n in OUTCOMES)
            problems.append(f"outcome: must be one of {known} (is {request.outcome})")
        if not 0 <= request.snapshot_generation <= MAX_EXACT_INTEGER:
            problems.append(
                f"snapshot_generation: must be within 0 and {MAX_EXACT_INTEGER} "
                f"(is {request.snapshot_generation})"
            )
        if outcome is None or problems:
            raise ValueError("; ".join(problems))
        return PublishFeedback(
            node_name=request.node_name,
            snapshot_generation=request.snapshot_generation,
            outcome=outcome,
            problems=tuple(FieldProblem(p.field, p.message) for p in request.problems),
            dropped_fields=tuple(request.dropped_fields),
            slice_names=tuple(request.slice_names),
            error=request.error or None,
        )
