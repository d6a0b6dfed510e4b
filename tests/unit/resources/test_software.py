"""Software configs and deployments, the pure parts: what is stored, derived and decided.

The expected values are Heat 27.0.1's, read off a real Heat (stored configs from
``GET /software_configs``, derived configs from ``GET /software_deployments/metadata``,
reasons and events from its stacks); tests/heat_parity/cases/software records the same.
"""

from __future__ import annotations

import dataclasses
import email
from typing import Any

import pytest

from libs.engine.status import Action, Status
from libs.resources import stack_user
from libs.resources.deployment_signal import Signalled, event_reason, signalled
from libs.resources.derived_config import MissingInput, Transport, config_hash, deploy_inputs, substituted
from libs.resources.registry import default_registry
from libs.resources.software_config import REMOVED_KEY, MultipartMime, run_stamp, stable_id
from libs.resources.software_deployment import SoftwareDeployment, failure_reason
from libs.resources.software_io import is_uuid_like, stored_body
from libs.resources.stack_user import StackUser
from libs.resources.steps import Done, Failed, Software, StepContext, StepResult, Store, Wait
from libs.resources.validation import plugin_checks
from libs.template import errors
from libs.template.request import StackRequest, load
from tests.unit.resources.resource_support import make_ctx, plugin

REGISTRY = default_registry()
SIGNAL_URL = "http://api:8004/v1/demo/stacks/st/5d2e/resources/r1/signal"
SIGNAL_SUBJECT = "ember.signal.demo.5d2e.r1"
CONFIG_ID = "8d6fc3d1-1111-2222-3333-444455556666"


# ---- inputs as stored -------------------------------------------------------------------------------

def _input(type_name: str, default: Any) -> dict[str, Any]:
    # A config resource's typed properties hold every key of an input, null where not given.
    return {"name": "n", "description": None, "type": type_name, "default": default,
            "replace_on_change": False}


def stored_input(declared: dict[str, Any]) -> dict[str, Any]:
    """One input of a config resource as its config row stores it."""
    [stored] = stored_body(None, [declared], None, None)["inputs"]
    return dict(stored)


@pytest.mark.parametrize(("type_name", "default", "stored"), [
    ("String", None, ""), ("Number", None, 0), ("Json", None, {}), ("Boolean", None, False),
    ("CommaDelimitedList", None, []), ("Number", "12", 12), ("Number", "1.5", 1.5), ("Number", 3, 3),
    ("Boolean", "true", True), ("Json", '{"a": 1}', '{"a": 1}'), ("Json", [1, 2], "[1, 2]"),
    ("Json", {"a": 1}, {"a": 1}), ("CommaDelimitedList", "a, b", ["a", " b"]),
    ("CommaDelimitedList", ["x", 1], ["x", 1]), ("String", 5, "5"), ("Number", "", ""), ("Json", "", ""),
])
def test_an_inputs_default_is_stored_as_its_type_makes_it(type_name: str, default: Any, stored: Any) -> None:
    assert stored_input(_input(type_name, default)) == {"name": "n", "description": "", "type": type_name,
                                                       "default": stored}


@pytest.mark.parametrize(("type_name", "default", "message"), [
    ("Boolean", "yes", 'Property error: default: "yes" is not a valid boolean'),
    ("Number", "abc", "Property error: default: could not convert string to float: 'abc'"),
    ("String", {"a": 1}, "Property error: default: Value must be a string; got {'a': 1}"),
])
def test_a_default_its_type_refuses_is_heats_value_error(type_name: str, default: Any, message: str) -> None:
    with pytest.raises(errors.UnhandledPythonError) as info:
        stored_input(_input(type_name, default))
    assert (info.value.error_type, str(info.value)) == ("ValueError", message)


def test_an_input_keeps_replace_on_change_only_when_true_and_a_value_as_given() -> None:
    assert stored_input({**_input("Number", None), "replace_on_change": True, "value": "7"}) == {
        "name": "n", "description": "", "type": "Number", "default": 0, "replace_on_change": True,
        "value": "7"}
    assert stored_input({"name": "n"}) == {"name": "n", "type": "String"}  # left out: null, not ""


@pytest.mark.parametrize(("value", "like"), [
    (CONFIG_ID, True), (CONFIG_ID.upper(), True), (CONFIG_ID.replace("-", ""), True), ("notauuid", False),
    ("#!/bin/sh", False), (None, False), (12, False),
])
def test_which_values_name_a_config_by_id(value: Any, like: bool) -> None:
    assert is_uuid_like(value) is like


# ---- derived inputs -------------------------------------------------------------------------------

USER = StackUser(id="u1", secret="s3cr3t")
SIGNED = f"{SIGNAL_URL}?ember_signature=s3cr3t"
CREDENTIALS = {"deploy_auth_url": "http://api:8004/identity/v3", "deploy_user_id": "u1",
               "deploy_password": "s3cr3t", "deploy_project_id": "demo"}


@pytest.mark.parametrize(("transport", "extra"), [
    ("NO_SIGNAL", {}),
    ("CFN_SIGNAL", {"deploy_signal_id": SIGNED, "deploy_signal_verb": "POST"}),
    ("TEMP_URL_SIGNAL", {"deploy_signal_id": SIGNED, "deploy_signal_verb": "POST"}),
    ("HEAT_SIGNAL", {"deploy_signal_id": SIGNED, "deploy_signal_verb": "POST", **CREDENTIALS}),
    ("ZAQAR_SIGNAL", {"deploy_signal_id": SIGNED, "deploy_signal_verb": "POST", **CREDENTIALS}),
    # Ember's own: the subject, and no URL for the agent to post to.
    ("NATS_SIGNAL", {"deploy_signal_subject": SIGNAL_SUBJECT}),
])
def test_the_deploy_inputs_per_transport(transport: str, extra: dict[str, str]) -> None:
    given = deploy_inputs(server_id="srv", action="CREATE", stack_path="st/5d2e", resource_name="r1",
                          transport=Transport(transport), signal_url=SIGNAL_URL, project="demo", user=USER,
                          signal_subject=SIGNAL_SUBJECT)
    assert {i["name"]: i["value"] for i in given} == {
        "deploy_server_id": "srv", "deploy_action": "CREATE", "deploy_stack_id": "st/5d2e",
        "deploy_resource_name": "r1", "deploy_signal_transport": transport, **extra}
    # Heat's order: the credentials between the auth URL and the project.
    if "deploy_user_id" in extra:
        assert [i["name"] for i in given][-4:] == list(CREDENTIALS)
    assert all(i["type"] == "String" and i["description"] for i in given)


def test_a_deployment_keeps_one_stack_user_for_all_its_configs() -> None:
    deployment = SoftwareDeployment()
    source = {"name": "cfg", "group": "script", "config": "run", "inputs": [], "outputs": []}
    ctx = dataclasses.replace(_ctx({"signal_transport": "HEAT_SIGNAL"}), signal_url=SIGNAL_URL)
    first = deployment.stored(Action.CREATE, ctx, source, CONFIG_ID)
    assert isinstance(first, Store) and first.stack_user is not None
    kept = first.data["stack_user"]
    assert kept is not None
    values = {i["name"]: i["value"] for i in first.configs[0].config["inputs"]}
    assert values["deploy_user_id"] == first.stack_user.id
    assert stack_user.digest(values["deploy_password"]) == first.stack_user.secret_hash
    assert values["deploy_signal_id"] == f"{SIGNAL_URL}?ember_signature={values['deploy_password']}"
    # The UPDATE's derived config has the same user: the one the resource keeps in its data.
    later = deployment.stored(Action.UPDATE, dataclasses.replace(ctx, data={"stack_user": kept}), source,
                              CONFIG_ID)
    assert isinstance(later, Store) and later.stack_user == first.stack_user
    # NO_SIGNAL never answers, NATS_SIGNAL answers on NATS: no user.
    for transport in ("NO_SIGNAL", "NATS_SIGNAL"):
        silent = deployment.stored(Action.CREATE, _ctx({"signal_transport": transport}), source, CONFIG_ID)
        assert isinstance(silent, Store) and silent.stack_user is None


@pytest.mark.parametrize(("transport", "subject", "expected"), [
    ("NATS_SIGNAL", SIGNAL_SUBJECT, {"deploy_signal_subject": SIGNAL_SUBJECT}),
    ("NATS_SIGNAL", None, {}),  # a context without NATS: nothing to answer on (the deployment waits)
    ("CFN_SIGNAL", SIGNAL_SUBJECT, {"deploy_signal_id": SIGNAL_URL, "deploy_signal_verb": "POST"}),
    ("NO_SIGNAL", SIGNAL_SUBJECT, {}),
])
def test_a_deployment_s_derived_config_says_where_to_answer(transport: str, subject: str | None,
                                                             expected: dict[str, str]) -> None:
    ctx = dataclasses.replace(_ctx({"signal_transport": transport}), signal_subject=subject)
    source = {"group": "script", "config": "run"}
    derived = SoftwareDeployment().derived(Action.CREATE, ctx, source, CONFIG_ID)
    answer = {i["name"]: i["value"] for i in derived.config["inputs"]
              if i["name"] in ("deploy_signal_id", "deploy_signal_verb", "deploy_signal_subject")}
    assert answer == expected
    assert {i["name"]: i["value"] for i in derived.config["inputs"]}["deploy_signal_transport"] == transport


def test_derived_inputs_in_heats_order_and_shape() -> None:
    deployment = SoftwareDeployment()
    source = {"name": "cfg", "group": "script", "config": "run", "options": {"x": 1},
              "inputs": [stored_input(_input("String", None)) | {"name": "foo"},
                         stored_input(_input("Number", 3)) | {"name": "bar"}],
              "outputs": [{"name": "o", "description": "", "type": "String", "error_output": False}]}
    ctx = _ctx({"input_values": {"foo": "x", "extra": [1, 2]}, "signal_transport": "NO_SIGNAL"})
    derived = deployment.derived(Action.UPDATE, ctx, source, CONFIG_ID)
    inputs = derived.config["inputs"]
    assert inputs[:3] == [
        {"name": "foo", "description": "", "type": "String", "default": "", "value": "x"},
        {"name": "bar", "description": "", "type": "Number", "default": 3, "value": 3},
        {"name": "extra", "type": "String", "value": [1, 2]}]
    assert [i["name"] for i in inputs[3:]] == ["deploy_server_id", "deploy_action", "deploy_stack_id",
                                               "deploy_resource_name", "deploy_signal_transport"]
    assert (derived.name, derived.group, derived.config["config"], derived.config["options"]) == (
        "cfg", "script", "run", {"x": 1})
    assert derived.config["outputs"] == source["outputs"]
    # Its name: the deployment's own, else the config's, else the deployment's physical name.
    quiet = {"signal_transport": "NO_SIGNAL"}
    named = deployment.derived(Action.UPDATE, _ctx({"name": "zz", **quiet}), source, CONFIG_ID)
    bare = deployment.derived(Action.UPDATE, _ctx(quiet), {}, CONFIG_ID)
    assert (named.name, bare.name, bare.group, bare.config["config"]) == (
        "zz", "st-r1-abcdefghijkl", "Heat::Ungrouped", "")


@pytest.mark.parametrize(("snippet", "key", "strict", "filled"), [
    ({"a": {"get_input": "foo"}}, "get_input", False, {"a": "F"}),
    ({"a": [{"get_input": "foo"}, "z", {"get_input": "nope"}]}, "get_input", False, {"a": ["F", "z", None]}),
    ({"a": {"get_input": "foo", "other": 1}}, "get_input", False, {"a": {"get_input": "foo", "other": 1}}),
    ({"a": {"get_input": "foo"}, "b": {"my_input": "foo"}}, "my_input", False,
     {"a": {"get_input": "foo"}, "b": "F"}),
    ({"a": {"get_input": ["foo"]}}, "get_input", True, {"a": {"get_input": ["foo"]}}),
    ("text", "get_input", True, "text"),
])
def test_a_structured_config_has_its_inputs_filled_in(snippet: Any, key: str, strict: bool,
                                                      filled: Any) -> None:
    assert substituted(snippet, {"foo": "F"}, key, strict) == filled


def test_strict_refuses_an_input_with_no_value() -> None:
    with pytest.raises(MissingInput) as info:
        substituted({"a": [{"get_input": "nope"}]}, {}, "get_input", True)
    assert str(info.value) == "The Parameter (nope) was not provided."


# ---- the hash ---------------------------------------------------------------------------------------

BODY: dict[str, Any] = {"config": "run", "options": {"o": 1},
                        "inputs": [{"name": "foo", "type": "String", "value": "x"},
                                   {"name": "deploy_action", "type": "String", "value": "CREATE"}],
                        "outputs": [{"name": "result", "type": "String"}]}


def test_the_hash_is_stable_and_blind_to_key_order() -> None:
    reordered = {k: BODY[k] for k in reversed(list(BODY))}
    assert config_hash(CONFIG_ID, "n", "script", BODY) == config_hash(CONFIG_ID, "n", "script", reordered)
    assert len(config_hash(CONFIG_ID, "n", "script", BODY)) == 64


@pytest.mark.parametrize("change", [
    # Another run of the same data is another config (the agent runs each hash once, for good).
    lambda i, n, g, b: ("f" + i[1:], n, g, b),
    lambda i, n, g, b: (i, n + "x", g, b),
    lambda i, n, g, b: (i, n, "ansible", b),
    lambda i, n, g, b: (i, n, g, {**b, "config": "run again"}),
    lambda i, n, g, b: (i, n, g, {**b, "options": {"o": 2}}),
    lambda i, n, g, b: (i, n, g, {**b, "inputs": [{**b["inputs"][0], "value": "y"}, b["inputs"][1]]}),
    lambda i, n, g, b: (i, n, g, {**b, "inputs": [b["inputs"][0], {**b["inputs"][1], "value": "UPDATE"}]}),
    lambda i, n, g, b: (i, n, g, {**b, "outputs": []}),
])
def test_the_hash_changes_with_any_derived_datum(change: Any) -> None:
    assert config_hash(*change(CONFIG_ID, "n", "script", BODY)) != config_hash(CONFIG_ID, "n", "script", BODY)


# ---- signals ----------------------------------------------------------------------------------------

OUTPUTS = [{"name": "result", "error_output": False}, {"name": "err", "error_output": True}]
STD_NONE = {"deploy_stdout": None, "deploy_stderr": None, "deploy_status_code": None}


@pytest.mark.parametrize(("details", "expected"), [
    ({"deploy_stdout": "out", "deploy_status_code": 0, "result": "R", "other": 1},
     Signalled(Status.COMPLETE, "Outputs received", {"old": 1, "result": "R", "deploy_stdout": "out",
                                                     "deploy_stderr": None, "deploy_status_code": 0},
               "deployment D succeeded")),
    ({"deploy_status_code": "0"}, Signalled(Status.COMPLETE, "Outputs received",
                                            {"old": 1, **STD_NONE, "deploy_status_code": "0"},
                                            "deployment D succeeded")),
    ({"deploy_status_code": 2, "deploy_stderr": "boom"},
     Signalled(Status.FAILED, "deploy_status_code : Deployment exited with non-zero status code: 2",
               {"old": 1, "deploy_stdout": None, "deploy_stderr": "boom", "deploy_status_code": 2},
               "deployment D failed (2)")),
    ({"err": ""},
     Signalled(Status.FAILED, "err : ", {"old": 1, "err": "", **STD_NONE}, "deployment D failed")),
    ({"err": None, "deploy_status_code": "3"},
     Signalled(Status.FAILED,
               "deploy_status_code : Deployment exited with non-zero status code: 3, err : None",
               {"old": 1, "err": None, **STD_NONE, "deploy_status_code": "3"}, "deployment D failed")),
    ("just text", Signalled(Status.COMPLETE, "Outputs received", {"old": 1, **STD_NONE},
                            "deployment D succeeded")),
    (None, Signalled(Status.COMPLETE, "Outputs received", {"old": 1, **STD_NONE}, "deployment D succeeded")),
])
def test_a_signal_of_a_deployment_in_progress(details: Any, expected: Signalled) -> None:
    assert signalled("D", "IN_PROGRESS", {"old": 1}, OUTPUTS, details) == expected


@pytest.mark.parametrize("status", ["COMPLETE", "FAILED"])
def test_a_deployment_not_in_progress_takes_no_signal(status: str) -> None:
    assert signalled("D", status, {}, OUTPUTS, {"deploy_status_code": 1}) is None


@pytest.mark.parametrize(("details", "reason"), [
    (None, "No signal details provided"), ("text", "No signal details provided"),
    ([1, 2], "No signal details provided"), ({}, "Unknown"), ({"deploy_stdout": "x"}, "Unknown"),
    ({"previous": "ok", "current": "alarm", "reason": "high"}, "alarm state changed from ok to alarm (high)"),
])
def test_the_event_of_a_signal_that_changed_nothing(details: Any, reason: str) -> None:
    assert event_reason(None, details) == reason
    done = signalled("D", "IN_PROGRESS", {}, [], details)
    assert event_reason(done, details) == "Signal: deployment D succeeded"


# ---- validation -------------------------------------------------------------------------------------

def _error(resources: dict[str, Any]) -> tuple[str, str]:
    template = {"heat_template_version": "2016-10-14", "resources": resources}
    with pytest.raises(errors.TemplateError) as info:
        load(StackRequest(template=template), stack_name="s", stack_id="i", project_id="p",
             builtin_types=REGISTRY.types(), checks=plugin_checks(REGISTRY))
    return info.value.error_type, str(info.value)


P = "Property error: resources"


@pytest.mark.parametrize(("resources", "message"), [
    ({"comp": {"type": "OS::Heat::SoftwareComponent", "properties": {"configs": [
        {"actions": ["CREATE"], "config": "c", "tool": "script"},
        {"actions": ["CREATE", "DELETE"], "config": "d", "tool": "script"}]}}},
     'Defining more than one configuration for the same action in SoftwareComponent "comp" is not allowed.'),
    ({"comp": {"type": "OS::Heat::SoftwareComponent", "properties": {"configs": []}}},
     f"{P}.comp.properties.configs: length (0) is out of range (min: 1, max: None)"),
    ({"comp": {"type": "OS::Heat::SoftwareComponent",
               "properties": {"configs": [{"actions": [], "tool": "t"}]}}},
     f"{P}.comp.properties.configs[0].actions: length (0) is out of range (min: 1, max: None)"),
    ({"comp": {"type": "OS::Heat::SoftwareComponent", "properties": {"configs": [{"config": "c"}]}}},
     f"{P}.comp.properties.configs[0]: Property tool not assigned"),
    ({"d": {"type": "OS::Heat::SoftwareDeployment",
            "properties": {"server": "x", "signal_transport": "BOGUS"}}},
     f'{P}.d.properties.signal_transport: "BOGUS" is not an allowed value ["CFN_SIGNAL", "TEMP_URL_SIGNAL", '
     '"HEAT_SIGNAL", "NO_SIGNAL", "ZAQAR_SIGNAL"]'),
    ({"d": {"type": "OS::Heat::SoftwareDeployment",
            "properties": {"server": "x", "actions": ["CREATE", "CHECK"]}}},
     f'{P}.d.properties.actions: ["CREATE", "CHECK"] is not an allowed value ["CREATE", "UPDATE", "DELETE", '
     '"SUSPEND", "RESUME"]'),
    ({"d": {"type": "OS::Heat::SoftwareDeployment", "properties": {}}},
     f"{P}.d.properties: Property server not assigned"),
    ({"c": {"type": "OS::Heat::SoftwareConfig", "properties": {"inputs": [{"name": "a", "type": "Bogus"}]}}},
     f'{P}.c.properties.inputs[0].type: "Bogus" is not an allowed value ["String", "Number", '
     '"CommaDelimitedList", "Json", "Boolean"]'),
    ({"c": {"type": "OS::Heat::SoftwareConfig", "properties": {"inputs": [{"type": "String"}]}}},
     f"{P}.c.properties.inputs[0]: Property name not assigned"),
    ({"c": {"type": "OS::Heat::SoftwareConfig", "properties": {"inputs": [{"name": "a", "bogus": 1}]}}},
     f"{P}.c.properties.inputs[0]: Unknown Property bogus"),
    ({"c": {"type": "OS::Heat::SoftwareConfig",
            "properties": {"outputs": [{"name": "a", "error_output": "no"}]}}},
     f'{P}.c.properties.outputs[0].error_output: "no" is not a valid boolean'),
    ({"m": {"type": "OS::Heat::MultipartMime", "properties": {"parts": [{"config": "x", "type": "bogus"}]}}},
     f'{P}.m.properties.parts[0].type: "bogus" is not an allowed value ["text", "multipart"]'),
    ({"d": {"type": "OS::Heat::StructuredDeployment",
            "properties": {"server": "x", "input_values_validate": "MAYBE"}}},
     f'{P}.d.properties.input_values_validate: "MAYBE" is not an allowed value ["LAX", "STRICT"]'),
    ({"c": {"type": "OS::Heat::CloudConfig", "properties": {"cloud_config": "text"}}},
     f'{P}.c.properties.cloud_config: "text" is not a map'),
    ({"c": {"type": "OS::Heat::SoftwareConfig", "properties": {"config": {"a": 1}}}},
     f"{P}.c.properties.config: Value must be a string; got {{'a': 1}}"),
    ({"server": {"type": "OS::Nova::Server", "properties": {"image": "cirros", "flavor": "m1.tiny"}},
      "d": {"type": "OS::Heat::SoftwareDeployment", "properties": {"server": {"get_resource": "server"}}}},
     "Resource server's property user_data_format should be set to SOFTWARE_CONFIG since there are software "
     "deployments on it."),
])
def test_heats_validation_messages(resources: dict[str, Any], message: str) -> None:
    assert _error(resources) == ("StackValidationFailed", message)


def test_a_deployment_on_a_software_config_server_or_a_stub_is_valid() -> None:
    server = {"type": "OS::Nova::Server", "properties": {"image": "cirros", "flavor": "m1.tiny",
                                                         "user_data_format": "SOFTWARE_CONFIG"}}
    deployment = {"type": "OS::Heat::SoftwareDeployment",
                  "properties": {"server": {"get_resource": "server"}}}
    for stands_in in (server, {"type": "OS::Heat::None"}):
        template = {"heat_template_version": "2016-10-14",
                    "resources": {"server": stands_in, "d": deployment}}
        load(StackRequest(template=template), stack_name="s", stack_id="i", project_id="p",
             builtin_types=REGISTRY.types(), checks=plugin_checks(REGISTRY))


# ---- the config types' steps -------------------------------------------------------------------------

def _ctx(properties: dict[str, Any], *, physical_id: str | None = None, software: Software | None = None,
         data: dict[str, str] | None = None, now: float = 100.0) -> StepContext:
    ctx = make_ctx({"signal_transport": "HEAT_SIGNAL", "actions": ["CREATE", "UPDATE"], "server": "srv",
                    **properties}, physical_id=physical_id, data=data, now=now)
    return dataclasses.replace(ctx, software=software, cloud_tag="ember-st-1", signal_url=SIGNAL_URL,
                               project="demo", started_at=90.0)


def test_a_config_is_stored_then_done_with_its_id() -> None:
    config = plugin("OS::Heat::SoftwareConfig")
    props = {"group": "script", "config": "run", "options": None, "inputs": [_input("Number", "4")],
             "outputs": None}
    first = config.start(Action.CREATE, _ctx(props))
    assert isinstance(first, Store) and first.physical_id == stable_id(_ctx(props), "config")
    [stored] = first.configs
    assert (stored.id, stored.name, stored.group, stored.hash) == (first.physical_id, "st-r1-abcdefghijkl",
                                                                  "script", None)
    assert stored.config == {"config": "run", "inputs": [{"name": "n", "description": "", "type": "Number",
                                                          "default": 4}], "outputs": [], "options": {}}
    found = Software(configs={stored.id: {"id": stored.id}})
    assert config.check(Action.CREATE, _ctx(props, physical_id=stored.id, software=found)) == Done(
        physical_id=stored.id)
    bad = config.start(Action.CREATE, _ctx({**props, "inputs": [_input("Number", "abc")]}))
    assert bad == Failed("Property error: default: could not convert string to float: 'abc'",
                         error="ValueError")


def test_a_config_delete_fails_as_heats_while_a_deployment_uses_it() -> None:
    config = plugin("OS::Heat::SoftwareConfig")
    ctx = _ctx({}, physical_id=CONFIG_ID, software=Software(configs={CONFIG_ID: {"id": CONFIG_ID}}))
    asked = config.start(Action.DELETE, ctx)
    stamp = run_stamp(Action.DELETE, ctx)
    assert asked == Store(removed_configs=(CONFIG_ID,), data={REMOVED_KEY: stamp})
    after = dataclasses.replace(ctx, data={REMOVED_KEY: stamp})
    assert config.check(Action.DELETE, after) == Failed(
        f"Software config with id {CONFIG_ID} can not be deleted as it is referenced.",
        error="InvalidRestrictedAction")
    assert config.check(Action.DELETE, dataclasses.replace(after, software=Software())) == Done()
    assert config.start(Action.DELETE, _ctx({})) == Done()  # never made


def test_cloud_config_and_multipart_mime_as_heats() -> None:
    cloud = plugin("OS::Heat::CloudConfig")
    document = cloud.resolve_attribute("config", "id", {}, {"cloud_config": {
        "users": [{"name": "u", "sudo": "ALL"}], "write_files": [{"path": "/x", "content": "a\nb\n"}]}})
    assert document == ("#cloud-config\nusers:\n- name: u\n  sudo: ALL\nwrite_files:\n"
                        "- content: 'a\n\n    b\n\n    '\n  path: /x\n")
    mime = MultipartMime()
    parts = [{"config": CONFIG_ID, "type": "text", "filename": None, "subtype": None},
             {"config": "#!/bin/sh\necho 1", "type": "text", "filename": "s.sh", "subtype": None},
             {"config": "plain", "type": "text", "filename": None, "subtype": "x-shellscript"},
             {"config": "café", "type": "text", "filename": None, "subtype": None}]
    assert mime.software_reads({"parts": parts}, None).configs == (CONFIG_ID,)
    software = Software(configs={CONFIG_ID: {"config": "#cloud-config\na: 1\n"}})
    message = str(mime.content(_ctx({"parts": parts}, software=software)))
    parsed = [(p.get_content_type(), p.get_filename(), bytes(p.get_payload(decode=True)).decode())
              for p in email.message_from_string(message).walk() if not p.is_multipart()]
    assert parsed == [("text/plain", None, "#cloud-config\na: 1\n"), ("text/s", "s.sh", "#!/bin/sh\necho 1"),
                      ("text/x-shellscript", None, "plain"), ("text/plain", None, "café")]
    assert ('Content-Type: text/plain; charset="utf-8"\nMIME-Version: 1.0\n'
            "Content-Transfer-Encoding: base64") in message
    again = [{"config": message, "type": "multipart", "filename": None, "subtype": None}]
    assert str(mime.content(_ctx({"parts": again}))).count("Content-Type: text/") == 4


# ---- the deployment's steps ----------------------------------------------------------------------------

SD = SoftwareDeployment()
SOURCE = {"id": CONFIG_ID, "name": "cfg", "group": "script", "config": "run", "options": {}, "inputs": [],
          "outputs": [{"name": "result", "description": "", "type": "String", "error_output": False}]}


def _deployment(config_id: str, status: str, reason: str = "", outputs: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    return {"id": "dep", "server_id": "srv", "config_id": config_id, "input_values": {},
            "output_values": outputs or {}, "action": "CREATE", "status": status, "status_reason": reason}


def _step(action: Action, props: dict[str, Any], deployment: dict[str, Any] | None = None, *,
          source: dict[str, Any] | None = SOURCE, gone: bool = False, data: dict[str, str] | None = None
          ) -> tuple[StepResult, StepContext]:
    configs = {CONFIG_ID: source} if source is not None else {}
    ctx = _ctx({"config": CONFIG_ID, **props}, physical_id="dep" if deployment else None,
               software=Software(configs=configs, deployment=deployment, server_gone=gone), data=data)
    return SD.start(action, ctx), ctx


def _derived_id(action: Action, ctx: StepContext) -> str:
    return stable_id(ctx, "derived", run_stamp(action, ctx))


def test_a_deployment_stores_its_derived_config_then_waits_then_completes() -> None:
    result, ctx = _step(Action.CREATE, {})
    assert isinstance(result, Store) and result.deployment is not None
    want = _derived_id(Action.CREATE, ctx)
    assert (result.deployment.config_id, result.deployment.status, result.deployment.status_reason,
            result.physical_id) == (want, "IN_PROGRESS", "Deploy data available", result.deployment.id)
    assert [c.id for c in result.configs] == [want] and result.configs[0].hash is not None
    waiting, _ = _step(Action.CREATE, {}, _deployment(want, "IN_PROGRESS"))
    assert waiting == Wait(1.0)
    done, _ = _step(Action.CREATE, {}, _deployment(want, "COMPLETE", outputs={"result": "R"}))
    kept = {"output_values": '{"result":"R"}', "output_names": '["result"]'}
    assert done == Done(physical_id="dep", data=kept)
    assert SD.read("result", [], "dep", kept, {}, resource_name="r1") == "R"
    assert SD.read("deploy_stdout", [], "dep", kept, {}, resource_name="r1") is None
    failed, _ = _step(Action.CREATE, {}, _deployment(want, "FAILED", "err : x"))
    assert failed == Failed("Deployment to server failed: err : x", error="Error")


@pytest.mark.parametrize(("stderr", "reason"), [
    (None, "Deployment to server failed: code : 1"),
    ("", "Deployment to server failed: code : 1"),
    ("boom\n", "Deployment to server failed: code : 1; deploy_stderr: boom"),
    ("x" * 600 + "the end\n", "Deployment to server failed: code : 1; deploy_stderr: ..."
     + ("x" * 600 + "the end")[-500:]),
])
def test_a_failed_deployments_reason_ends_with_its_stderr(stderr: str | None, reason: str) -> None:
    assert failure_reason({"status_reason": "code : 1", "output_values": {"deploy_stderr": stderr}}) == reason


def test_a_deployment_not_asked_for_an_action_completes_at_once() -> None:
    for action in (Action.UPDATE, Action.SUSPEND, Action.RESUME):
        result, _ = _step(action, {"actions": ["CREATE"]}, _deployment("old", "COMPLETE"))
        assert isinstance(result, Done)
    component = {**SOURCE, "group": "component",
                 "config": {"configs": [{"actions": ["SUSPEND"], "config": "c", "tool": "script"}]}}
    # A component's own actions say which run, whatever the deployment's actions say.
    assert isinstance(_step(Action.SUSPEND, {"actions": ["CREATE"]}, source=component)[0], Store)
    assert isinstance(_step(Action.CREATE, {"actions": ["CREATE"]}, source=component)[0], Done)


def test_no_signal_stores_a_complete_deployment() -> None:
    result, _ = _step(Action.CREATE, {"signal_transport": "NO_SIGNAL"})
    assert isinstance(result, Store) and result.deployment is not None
    assert (result.deployment.status, result.deployment.status_reason) == (
        "COMPLETE", "Not waiting for outputs signal")


@pytest.mark.parametrize(("props", "source", "failure"), [
    ({}, None, Failed(f"Software config with id {CONFIG_ID} not found", error="NotFound")),
    ({"input_values_validate": "STRICT", "input_key": "get_input"},
     {**SOURCE, "config": {"a": {"get_input": "x"}}},
     Failed("The Parameter (x) was not provided.", error="UserParameterMissing")),
])
def test_a_deployment_that_cannot_be_derived_fails_as_heats(props: dict[str, Any],
                                                            source: dict[str, Any] | None,
                                                            failure: Failed) -> None:
    deployment = plugin("OS::Heat::StructuredDeployment") if "input_key" in props else SD
    ctx = _ctx({"config": CONFIG_ID, **props},
               software=Software(configs={CONFIG_ID: source} if source is not None else {}))
    assert deployment.start(Action.CREATE, ctx) == failure


def test_delete_runs_the_delete_config_unless_the_server_is_gone_then_removes_the_deployment() -> None:
    listed = {"actions": ["CREATE", "DELETE"]}
    created = _deployment("created", "COMPLETE")
    result, ctx = _step(Action.DELETE, listed, created)
    assert isinstance(result, Store) and result.deployment is not None
    want = _derived_id(Action.DELETE, ctx)
    assert (result.deployment.config_id, result.deployment.action) == (want, "DELETE")
    assert _step(Action.DELETE, listed, _deployment(want, "IN_PROGRESS"))[0] == Wait(1.0)
    stamp = run_stamp(Action.DELETE, ctx)
    removal = Store(removed_deployment="dep", removed_configs=(want,), data={REMOVED_KEY: stamp})
    assert _step(Action.DELETE, listed, _deployment(want, "COMPLETE"))[0] == removal
    assert _step(Action.DELETE, listed, _deployment(want, "IN_PROGRESS"), gone=True)[0] == removal
    assert _step(Action.DELETE, listed, _deployment(want, "FAILED", "no"))[0] == Failed(
        "Deployment to server failed: no", error="Error")
    # Not listed, or its config gone: the deployment and its config are removed at once.
    unlisted = Store(removed_deployment="dep", removed_configs=("created",), data={REMOVED_KEY: stamp})
    assert _step(Action.DELETE, {}, created)[0] == unlisted
    assert _step(Action.DELETE, listed, created, source=None)[0] == unlisted
    assert _step(Action.DELETE, listed, None, data={REMOVED_KEY: stamp})[0] == Done()
    assert _step(Action.DELETE, {}, None)[0] == Done()


def test_an_output_not_declared_is_heats_invalid_attribute() -> None:
    from libs.template.attribute_store import AttributeFailed
    with pytest.raises(AttributeFailed) as info:
        SD.read("nosuch", [], "dep", {"output_names": '["result"]'}, {}, resource_name="dep")
    assert str(info.value) == "The Referenced Attribute (dep nosuch) is incorrect."
    assert SD.read("result", [], "dep", {"output_names": '["result"]'}, {}, resource_name="dep") is None


def test_a_lifecycle_config_needs_one_actions_config_and_gives_each_action_its_own() -> None:
    from libs.resources.lifecycle_config import GROUP, LifecycleConfig, for_action
    from libs.template.errors import StackValidationFailed
    life = LifecycleConfig()
    with pytest.raises(StackValidationFailed, match="Give at least one of create_config"):
        life.validate({"group": "script"}, resource_name="life")
    props = life.validate({"create_config": "c", "delete_config": "d"}, resource_name="life")
    stored = life.stored(_ctx(props), "cfg")
    assert (stored.group, stored.config["config"]) == (GROUP, {"group": "script", "actions": {
        "CREATE": "c", "DELETE": "d"}})
    source = {"group": stored.group, **stored.config}  # as a deployment reads a stored config
    assert [for_action(source, a) for a in ("CREATE", "UPDATE", "DELETE")] == [
        ("script", "c"), None, ("script", "d")]
    assert for_action({"group": "script", "config": "x"}, "CREATE") is None  # any other config
    deployment = SoftwareDeployment()
    # Its own actions say which run, whatever the deployment's `actions`.
    assert [deployment.runs(Action(a), {"actions": ["CREATE", "UPDATE"]}, source)
            for a in ("CREATE", "UPDATE", "DELETE")] == [True, False, True]
