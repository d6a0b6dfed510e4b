"""What a server's user_data becomes per user_data_format: pure and the same every time."""

from __future__ import annotations

import base64
import email

import pytest

from libs.resources.user_data import build_user_data, config_named, content_of, encoded


def _parts(text: str) -> list[tuple[str | None, str, str]]:
    message = email.message_from_string(text)
    assert message.is_multipart()
    return [(p.get_filename(), p.get_content_type(), str(p.get_payload()).strip())
            for p in message.walk() if not p.is_multipart()]


def test_raw_is_as_given() -> None:
    assert build_user_data("RAW", "#!/bin/sh\necho hi") == "#!/bin/sh\necho hi"
    assert encoded("x") == base64.b64encode(b"x").decode()
    assert encoded("") is None


def test_heat_cfntools_carries_the_text_as_cfn_userdata() -> None:
    built = build_user_data("HEAT_CFNTOOLS", "echo hi")
    assert _parts(built) == [("cfn-userdata", "text/x-cfninitdata", "echo hi")]
    assert built == build_user_data("HEAT_CFNTOOLS", "echo hi")  # no randomness in the boundary


@pytest.mark.parametrize(("content", "first"), [
    ("#!/bin/sh\necho hi", (None, "text/x-shellscript", "#!/bin/sh\necho hi")),
    ("#cloud-config\npackages: [git]", (None, "text/cloud-config", "#cloud-config\npackages: [git]")),
])
def test_software_config_adds_the_deployment_metadata(content: str,
                                                      first: tuple[str | None, str, str]) -> None:
    parts = _parts(build_user_data("SOFTWARE_CONFIG", content, {"os-collect-config": {}}))
    assert parts[0] == first
    assert parts[1] == ("cfn-init-data", "text/x-cfninitdata", '{"os-collect-config": {}}')


CONFIG_ID = "0b1f1f5e-3a57-4d4e-8d0b-3d4c6f1e2a10"


@pytest.mark.parametrize(("fmt", "named"), [("RAW", CONFIG_ID), ("SOFTWARE_CONFIG", CONFIG_ID),
                                            ("HEAT_CFNTOOLS", None)])
def test_a_uuid_names_a_config_only_as_raw_or_software_config(fmt: str, named: str | None) -> None:
    assert config_named({"user_data_format": fmt, "user_data": CONFIG_ID}) == named
    assert config_named({"user_data_format": fmt, "user_data": "echo hi"}) is None


def test_the_named_configs_text_is_the_user_data_and_one_not_stored_leaves_the_uuid() -> None:
    props = {"user_data_format": "RAW", "user_data": CONFIG_ID}
    assert content_of(props, {CONFIG_ID: {"config": "#!/bin/sh\n"}}) == "#!/bin/sh\n"
    assert content_of(props, {}) == CONFIG_ID
    assert content_of(props, {CONFIG_ID: {"config": None}}) == ""
