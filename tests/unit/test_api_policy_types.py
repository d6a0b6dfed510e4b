"""Heat's resource_types:<type> policies: admin-only types, measured against Heat 27 on Keystone."""

from __future__ import annotations

import pytest

from services.api.policy import Forbidden, enforce_resource_types, refusal_for_type

MEMBER = frozenset({"member", "reader"})


@pytest.mark.parametrize(("type_name", "refusal"), [
    ("OS::Nova::Flavor", "resource_types:OS::Nova::Flavor"),
    ("OS::Keystone::Project", "OS::Keystone::Project"),  # a family's type: named bare, as Heat does
    ("OS::Nova::Server", None),
    ("OS::Heat::None", None),
])
def test_refusal_for_type(type_name: str, refusal: str | None) -> None:
    assert refusal_for_type(type_name) == refusal


def test_a_members_template_with_an_admin_type_is_forbidden() -> None:
    template = {"heat_template_version": "2018-08-31", "resources": {
        "n": {"type": "OS::Heat::None"}, "f": {"type": "OS::Nova::Flavor"}}}
    with pytest.raises(Forbidden, match=r"^You are not authorized to use resource_types:OS::Nova::Flavor\.$"):
        enforce_resource_types(template, MEMBER)
    enforce_resource_types(template, frozenset({"admin"}))
    cfn = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {"f": {"Type": "OS::Nova::Flavor"}}}
    with pytest.raises(Forbidden):
        enforce_resource_types(cfn, MEMBER)
    enforce_resource_types({"resources": {"s": {"type": "OS::Nova::Server"}, "bad": "no map"}}, MEMBER)
    enforce_resource_types("not a map", MEMBER)
