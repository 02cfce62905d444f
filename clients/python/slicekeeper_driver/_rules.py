"""Kubernetes' syntax rules and the problem type :mod:`slicekeeper_driver.validation` and
:mod:`slicekeeper_driver.device_validation` share (private: import them from ``validation``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List

from slicekeeper_driver.inventory import NodeSelector

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# The API server's semverRe (Semantic Versioning 2.0.0).
_SEMVER_NUMBER = r"(0|[1-9]\d*)"
_SEMVER_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
SEMVER = re.compile(
    rf"^{_SEMVER_NUMBER}\.{_SEMVER_NUMBER}\.{_SEMVER_NUMBER}"
    rf"(-{_SEMVER_PRERELEASE}(\.{_SEMVER_PRERELEASE})*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)
# resource.Quantity's syntax: a number and an SI, binary SI or exponent suffix.
QUANTITY = re.compile(
    r"^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$"
)

#: Largest integer slicekeeper carries exactly (attribute values, pool generations): 2^53 - 1.
MAX_EXACT_INTEGER = 2**53 - 1
MAX_QUALIFIED_NAME_LENGTH = 63
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

LABEL_RULE = "must be a DNS-1123 label (lowercase alphanumerics and '-', starting and ending with an alphanumeric, at most 63 characters)"
SUBDOMAIN_RULE = "must be a DNS-1123 subdomain (DNS-1123 labels joined by '.', at most 253 characters)"


@dataclass(frozen=True)
class FieldProblem:
    """One broken rule: the field's path in the inventory (``pools[0].devices[3].name``) and
    the rule."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def is_int(value: object) -> bool:
    """An ``int`` that is no ``bool`` (in Python a bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_qualified_name(name: object) -> bool:
    """A label key such as ``example.com/ready`` (``metav1validation.ValidateLabelName``): a
    name of at most 63 characters, optionally prefixed by a DNS subdomain and ``/``."""
    if not isinstance(name, str):
        return False
    prefix, slash, rest = name.rpartition("/")
    if slash and (prefix == "" or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return len(rest) <= MAX_QUALIFIED_NAME_LENGTH and QUALIFIED_NAME.match(rest) is not None


def check_quantity(quantity: object, path: str, problems: List[FieldProblem]) -> None:
    """A Kubernetes quantity: a ``str`` such as ``"80Gi"``, or an ``int``."""
    if is_int(quantity) or (isinstance(quantity, str) and QUANTITY.match(quantity)):
        return
    problems.append(FieldProblem(path, f"must be a Kubernetes quantity such as '80Gi' or '1500m' (is {quantity!r})"))


def check_node_selector(selector: object, path: str, problems: List[FieldProblem]) -> None:
    """A pool's or a device's node selector: exactly one term, known operators."""
    if not isinstance(selector, NodeSelector):
        problems.append(FieldProblem(path, f"must be a NodeSelector (is {type(selector).__name__})"))
        return
    if len(selector.terms) != 1:
        problems.append(FieldProblem(f"{path}.terms", f"must have exactly one term (has {len(selector.terms)})"))
    for i, term in enumerate(selector.terms):
        requirements = [("match_expressions", r) for r in term.match_expressions]
        requirements += [("match_fields", r) for r in term.match_fields]
        for kind, requirement in requirements:
            if requirement.operator not in NODE_SELECTOR_OPERATORS:
                problems.append(
                    FieldProblem(
                        f"{path}.terms[{i}].{kind}[].operator",
                        f"must be one of {', '.join(NODE_SELECTOR_OPERATORS)} (is {requirement.operator!r})",
                    )
                )
