"""Stack validation with cloud-checked constraints: the lookups it asks for, then Heat's verdicts."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from libs import operations
from libs.cloud.calls import Answer, CloudError, ErrorKind
from libs.cloud.lookups import CloudAnswers, CloudLookupsNeeded, Lookup, calls_for
from libs.resources.registry import default_registry
from libs.template import errors
from libs.template.request import StackRequest

HOW = operations.Checking(project="demo", stack_name="s", stack_id="00000000-0000-0000-0000-000000000001",
                          registry=default_registry(), cloud=CloudAnswers(ask=True))
NOT_FOUND = Answer(error=CloudError(ErrorKind.NOT_FOUND, "Not found", 404, "NotFoundException"))


def _template(**parameters: Any) -> dict[str, Any]:
    return {"heat_template_version": "2018-08-31", "parameters": parameters,
            "resources": {"r": {"type": "OS::Heat::None"}}}


def _cloud(name: str) -> dict[str, Any]:
    return {"type": "string", "constraints": [{"custom_constraint": name}]}


def _answers(lookups: tuple[Lookup, ...], found: set[str]) -> dict[str, Answer]:
    """The cloud has the things named in ``found`` (by value) and nothing else."""
    answers = {}
    for call in calls_for(lookups):
        value = call.args[0] if call.args else call.kwargs.get("name")
        if call.method in ("images", "networks"):
            answers[call.key] = Answer([{"id": "i1", "name": value}] if value in found else [])
        else:
            answers[call.key] = Answer({"id": "f1", "name": value}) if value in found else NOT_FOUND
    return answers


CASES: list[tuple[str, dict[str, Any], dict[str, str], set[str], str | None]] = [
    ("all there", {"flavor": _cloud("nova.flavor"), "image": _cloud("glance.image")},
     {"flavor": "m1.tiny", "image": "cirros"}, {"m1.tiny", "cirros"}, None),
    ("no such flavor", {"flavor": _cloud("nova.flavor")}, {"flavor": "m1.huge"}, set(),
     "Parameter 'flavor' is invalid: Error validating value 'm1.huge': No Flavor matching "
     "{'name': 'm1.huge'}. (HTTP 404)"),
    ("no such image", {"image": _cloud("glance.image")}, {"image": "fedora"}, set(),
     "Parameter 'image' is invalid: Error validating value 'fedora': No images matching {'name': 'fedora'}."),
    ("a cloud failure comes before a later parameter's own",
     {"flavor": _cloud("nova.flavor"),
      "size": {"type": "string", "constraints": [{"allowed_values": ["a"]}]}},
     {"flavor": "m1.huge", "size": "b"}, set(),
     "Parameter 'flavor' is invalid: Error validating value 'm1.huge': No Flavor matching "
     "{'name': 'm1.huge'}. (HTTP 404)"),
    ("a later parameter's own failure when the cloud has the thing",
     {"flavor": _cloud("nova.flavor"),
      "size": {"type": "string", "constraints": [{"allowed_values": ["a"]}]}},
     {"flavor": "m1.tiny", "size": "b"}, {"m1.tiny"},
     'Parameter \'size\' is invalid: "b" is not an allowed value ["a"]'),
]


@pytest.mark.parametrize(("parameters", "values", "found", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_create_checks_against_the_answers(parameters: dict[str, Any], values: dict[str, str],
                                           found: set[str], expected: str | None) -> None:
    given = StackRequest(template=_template(**parameters), parameters=values)
    with pytest.raises(CloudLookupsNeeded) as needed:
        operations.checked_create(given, HOW)
    assert {lookup.value for lookup in needed.value.lookups} == {v for k, v in values.items()
                                                                  if k in ("flavor", "image")}
    answered = dataclasses.replace(HOW, cloud=CloudAnswers(True, _answers(needed.value.lookups, found)))
    if expected is None:
        operations.checked_create(given, answered)
    else:
        with pytest.raises(errors.StackValidationFailed) as failed:
            operations.checked_create(given, answered)
        assert str(failed.value) == expected


def test_without_lookups_cloud_values_pass() -> None:
    """Where no cloud can be asked (a nested stack's check in the worker), the values pass."""
    given = StackRequest(template=_template(flavor=_cloud("nova.flavor")), parameters={"flavor": "m1.huge"})
    operations.checked_create(given, dataclasses.replace(HOW, cloud=CloudAnswers()))


def test_a_template_without_cloud_constraints_asks_nothing() -> None:
    operations.checked_create(StackRequest(template=_template()), HOW)


@pytest.mark.parametrize("network_key", ["network", "network_id"])
def test_a_reference_to_a_resource_not_yet_made_asks_the_cloud_nothing(network_key: str) -> None:
    # The deprecated name (Heat's translation to ``network``) reads the resource as the new one does.
    template = {"heat_template_version": "2018-08-31", "resources": {
        "net": {"type": "OS::Neutron::Net"},
        "subnet": {"type": "OS::Neutron::Subnet",
                   "properties": {network_key: {"get_resource": "net"}, "cidr": "10.9.0.0/24"}}}}
    operations.checked_create(StackRequest(template=template), HOW)
