"""openstacksdk results as JSON, on Resource objects built locally from API bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from openstack.compute.v2.flavor import Flavor
from openstack.compute.v2.server import Server
from openstack.network.v2.network import Network

from libs.cloud.values import to_json


def test_a_resource_is_its_dict_with_sdk_names() -> None:
    body: dict[str, Any] = {"id": "n1", "name": "private", "admin_state_up": True, "router:external": False,
                            "tags": ["ember-r1"], "subnets": ["s1"]}
    network = Network(**body)
    value = to_json(network)
    assert value["id"] == "n1" and value["name"] == "private"
    assert value["is_admin_state_up"] is True and value["is_router_external"] is False
    assert value["tags"] == ["ember-r1"] and value["subnet_ids"] == ["s1"]
    assert "location" not in value  # computed: the sdk's own view of where it came from
    json.dumps(value)


def test_nested_resources_and_mappings_become_json() -> None:
    server = Server(id="s1", name="web", status="ACTIVE",
                    flavor={"original_name": "m1.tiny", "vcpus": 1},
                    addresses={"private": [{"addr": "10.0.0.5", "version": 4}]},
                    metadata={"ember_resource": "ember-r1"})
    value = to_json(server)
    assert value["flavor"]["original_name"] == "m1.tiny"
    assert value["addresses"] == {"private": [{"addr": "10.0.0.5", "version": 4}]}
    assert value["metadata"] == {"ember_resource": "ember-r1"}
    json.dumps(value)


def test_a_listing_is_every_page() -> None:
    def pages() -> Iterator[Flavor]:  # what a proxy's list method returns: a paging generator
        for page in range(3):
            for i in range(2):
                yield Flavor(id=f"f{page}{i}", name=f"m{page}.{i}", vcpus=page + 1)
    value = to_json(pages())
    assert [f["id"] for f in value] == ["f00", "f01", "f10", "f11", "f20", "f21"]
    assert value[2]["vcpus"] == 2


def test_plain_values() -> None:
    cases: list[tuple[Any, Any]] = [
        (None, None), (True, True), (3, 3), ("x", "x"), ((1, 2), [1, 2]), (b"ab", "ab"),
        ({"a": (None,)}, {"a": [None]}),
    ]
    for given, expected in cases:
        assert to_json(given) == expected


def test_an_existing_resource_reference_becomes_the_sdk_object() -> None:
    from openstack.network.v2.network import Network as SdkNetwork

    from libs.cloud.calls import existing
    from libs.cloud.sdk import _argument

    made = _argument(existing("network.v2.network.Network", "n1"))
    assert isinstance(made, SdkNetwork) and made.id == "n1"
    assert _argument({"type": "network", "id": "n1"}) == {"type": "network", "id": "n1"}
    try:
        _argument(existing("network.v2.network.Proxy", "n1"))
    except (TypeError, AttributeError):
        pass
    else:
        raise AssertionError("a class that is not a resource is refused")
