"""The plugin interface: names, failure reasons, update rules, defaults, and the registry."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType, physical_name, short_id
from libs.resources.properties import PropSchema
from libs.resources.registry import Registry, default_registry
from libs.resources.steps import Done, Failed, StepContext, StepResult
from libs.template.errors import NotSupported
from tests.unit.resources.resource_support import make_ctx


class Toy(ResourceType):
    """A minimal plugin: only what the base class does not provide."""

    type_name: ClassVar[str] = "Ember::Test::Toy"
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "size": PropSchema("integer", update_allowed=True),
        "flavor": PropSchema("string"),
        "name": PropSchema("string", immutable=True),
        "tag": PropSchema("string"),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {"a": AttrSchema("A.")}
    update_allowed_properties: ClassVar[frozenset[str]] = frozenset({"tag"})

    def start_create(self, ctx: StepContext) -> StepResult:
        return Done(physical_id="toy-1")


# ---- physical names and short ids --------------------------------------------------------------------

@pytest.mark.parametrize(
    ("stack", "resource", "limit", "expected"),
    [
        ("st", "r1", 255, "st-r1-abcdefghijkl"),
        # a backup stack's trailing "*" is not part of the name
        ("st*", "r1", 255, "st-r1-abcdefghijkl"),
        ("mystack", "server", 20, "my-rver-abcdefghijkl"),
        ("mystack", "server", 4, "my-l"),
        ("s" * 300, "r", None, "s" * 300 + "-r-abcdefghijkl"),
        ("s" * 300, "r", 0, "s" * 300 + "-r-abcdefghijkl"),
    ],
)
def test_physical_name(stack: str, resource: str, limit: int | None, expected: str) -> None:
    name = physical_name(stack, resource, "abcdefghijkl", limit)
    assert name == expected
    if limit:
        assert len(name) <= limit


def test_physical_name_default_limit_is_255() -> None:
    name = physical_name("s" * 300, "r", "abcdefghijkl")
    assert len(name) == 255 and name.startswith("ss-") and name.endswith("-r-abcdefghijkl")


def test_physical_name_limit_below_4() -> None:
    with pytest.raises(ValueError, match="limit cannot be less than 4"):
        physical_name("stack", "res", "abcdefghijkl", 3)


def _heat_style_short_id(value: uuid.UUID) -> str:
    # The same 60 bits, padded to 8 bytes and put through the standard base32 codec.
    return base64.b32encode((value.time << 4).to_bytes(8, "big"))[:12].decode().lower()


@pytest.mark.parametrize("text", [
    "4c1f4a6a-8d2b-4f5e-9a3c-1b2d3e4f5a6b", "00000000-0000-4000-8000-000000000000",
    "ffffffff-ffff-4fff-bfff-ffffffffffff", str(uuid.UUID(int=12345678901234567890, version=4)),
])
def test_short_id(text: str) -> None:
    value = short_id(text)
    assert value == _heat_style_short_id(uuid.UUID(text))
    assert len(value) == 12 and value == value.lower()
    assert short_id(uuid.UUID(text)) == value


def test_short_id_known_value() -> None:
    assert short_id("00000000-0000-4000-8000-000000000000") == "aaaaaaaaaaaa"


def test_short_id_wants_uuid4() -> None:
    with pytest.raises(ValueError, match=r"Invalid UUID version \(1\)"):
        short_id("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


# ---- failure reasons ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("failed", "path", "reason"),
    [
        (Failed("Test Resource failed r1", "ValueError"), ("resources", "r1"),
         "ValueError: resources.r1: Test Resource failed r1"),
        (Failed("Test Resource failed oops", "ValueError"), ("resources", "victim", "resources", "oops"),
         "ValueError: resources.victim.resources.oops: Test Resource failed oops"),
        (Failed("Resource not created"), ("Resources", "r"), "Exception: Resources.r: Resource not created"),
        (Failed("boom", ""), (), "boom"),
        (Failed("", "AssertionError"), ("resources", "s"), "AssertionError: resources.s: "),
    ],
)
def test_status_reason(failed: Failed, path: tuple[str, ...], reason: str) -> None:
    assert failed.status_reason(*path) == reason


# ---- update rules -------------------------------------------------------------------------------------

OLD = {"size": 1, "flavor": "small", "name": "n", "tag": "t"}


@pytest.mark.parametrize(
    ("new", "replace"),
    [
        ({}, False),
        ({"size": 2}, False),
        ({"tag": "u"}, False),  # allowed by the class's own list
        ({"size": 2, "tag": "u"}, False),
        ({"flavor": "big"}, True),
        ({"size": 2, "flavor": "big"}, True),
    ],
)
def test_needs_replace(new: dict[str, Any], replace: bool) -> None:
    toy = Toy()
    after = {**OLD, **new}
    assert toy.needs_replace(OLD, after) is replace
    assert toy.needs_update(OLD, after) is bool(new)
    assert toy.changed_properties(OLD, after) == set(new)


def test_needs_update_when_only_the_definition_changed() -> None:
    assert Toy().needs_update(OLD, OLD, definition_changed=True)


@pytest.mark.parametrize(
    ("new", "message"),
    [
        ({"name": "m"}, "Update to properties name of r1 (Ember::Test::Toy) is not supported."),
        ({"name": "m", "flavor": "x"},
         "Update to properties name of r1 (Ember::Test::Toy) is not supported."),
    ],
)
def test_immutable_properties(new: dict[str, Any], message: str) -> None:
    with pytest.raises(NotSupported) as caught:
        Toy().check_immutable(OLD, {**OLD, **new}, "r1")
    assert str(caught.value) == message
    assert caught.value.error_type == "NotSupported"


def test_immutable_unchanged_passes() -> None:
    Toy().check_immutable(OLD, {**OLD, "size": 3}, "r1")


# ---- defaults of the base class ----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (Action.CREATE, Done(physical_id="toy-1")),
        (Action.UPDATE, Done()),
        (Action.DELETE, Done()),
        (Action.SUSPEND, Done()),
        (Action.RESUME, Done()),
        (Action.CHECK, Done(reason="CHECK not supported for Ember::Test::Toy")),
    ],
)
def test_default_steps(action: Action, expected: StepResult) -> None:
    ctx = make_ctx(OLD, physical_id="toy-1")
    assert Toy().start(action, ctx) == expected
    assert Toy().check(action, ctx) == Done()


@pytest.mark.parametrize(
    ("physical_id", "reference"),
    [("toy-1", "toy-1"), (None, "r1")],
)
def test_default_reference_id(physical_id: str | None, reference: str) -> None:
    assert Toy().reference_id(physical_id, {}, resource_name="r1") == reference


def test_default_attributes() -> None:
    toy = Toy()
    assert toy.has_attribute("a") and toy.has_attribute("show") and not toy.has_attribute("b")
    assert toy.attribute("a", "toy-1", {}, OLD) is None
    assert toy.attribute("show", "toy-1", {}, OLD) is None
    assert toy.all_attributes("toy-1", {}, OLD) == {"a": None}
    with pytest.raises(KeyError):
        toy.attribute("b", "toy-1", {}, OLD)


def test_physical_resource_name_from_context() -> None:
    assert Toy().physical_resource_name(make_ctx({}, resource_name="web")) == "st-web-abcdefghijkl"


# ---- the registry --------------------------------------------------------------------------------------

def test_default_registry() -> None:
    registry = default_registry()
    # Cloud types (OS::Nova::*, OS::Neutron::*...) are checked by their own tests.
    heat_types = [t for t in registry.types() if t.startswith("OS::Heat::")]
    assert heat_types == ["OS::Heat::AutoScalingGroup", "OS::Heat::CloudConfig", "OS::Heat::InstanceGroup",
                          "OS::Heat::MultipartMime", "OS::Heat::None", "OS::Heat::RandomString",
                          "OS::Heat::ResourceChain", "OS::Heat::ResourceGroup", "OS::Heat::ScalingPolicy",
                          "OS::Heat::SoftwareComponent", "OS::Heat::SoftwareConfig",
                          "OS::Heat::SoftwareDeployment", "OS::Heat::SoftwareDeploymentGroup",
                          "OS::Heat::SoftwareDeployments", "OS::Heat::Stack", "OS::Heat::StructuredConfig",
                          "OS::Heat::StructuredDeployment", "OS::Heat::StructuredDeploymentGroup",
                          "OS::Heat::StructuredDeployments", "OS::Heat::TestResource", "OS::Heat::Value",
                          "OS::Heat::WaitCondition", "OS::Heat::WaitConditionHandle"]
    for name in registry.types():
        assert name in registry
        assert registry.get(name).type_name == name
    assert "OS::Nova::NoSuchThing" not in registry
    with pytest.raises(KeyError):
        registry.get("OS::Nova::NoSuchThing")


def test_registries_are_independent() -> None:
    mine = default_registry()
    assert mine.register(Toy) is Toy
    assert "Ember::Test::Toy" in mine
    assert "Ember::Test::Toy" not in default_registry()
    with pytest.raises(ValueError, match="Resource type Ember::Test::Toy is already registered"):
        mine.register(Toy)


def test_empty_registry() -> None:
    assert Registry().types() == []
