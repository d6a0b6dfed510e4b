"""``OS::Nova::KeyPair``: an SSH key pair in Nova, named by the template; its name is its id.

A key pair Nova generates (no ``public_key``) has a private key only in the create's
answer: kept (as a secret) when ``save_private_key`` says so. A crash that loses that
answer adopts the key pair by name, without its private key. Every property change
replaces the key pair, as in Heat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.cloud.calls import CloudCall
from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.cloud_object import CREATED, DELETED, FOUND, CloudObject
from libs.resources.cloud_steps import call, cloud_failure, compute
from libs.resources.properties import PropSchema
from libs.resources.steps import Done, Failed, StepContext, StepResult
from libs.template.constraints import AllowedValues, CustomConstraint, Length

NAME = "name"
SAVE_PRIVATE_KEY = "save_private_key"
PUBLIC_KEY = "public_key"
KEY_TYPE = "type"
USER = "user"
PRIVATE_KEY = "private_key"


class KeyPair(CloudObject):
    """A Nova key pair."""

    type_name: ClassVar[str] = "OS::Nova::KeyPair"
    description: ClassVar[str] = (
        "An SSH key pair servers can be booted with: the public key given, or a pair Nova "
        "generates, whose private key the resource may keep.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    secret_data: ClassVar[frozenset[str]] = frozenset({PRIVATE_KEY})
    has_check: ClassVar[bool] = True
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The key pair's name.", required=True, constraints=(Length(1, 255),)),
        SAVE_PRIVATE_KEY: PropSchema("boolean", "Keep a generated private key, readable as the "
                                     "private_key attribute.", default=False),
        PUBLIC_KEY: PropSchema("string", "The public key to import; Nova generates a pair when omitted."),
        KEY_TYPE: PropSchema("string", "Kind of key pair.", constraints=(AllowedValues(("ssh", "x509")),)),
        USER: PropSchema("string", "The user (name or id) who owns the key pair (administrators only).",
                         constraints=(CustomConstraint("keystone.user"),)),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        PUBLIC_KEY: AttrSchema("The public key.", "string"),
        PRIVATE_KEY: AttrSchema("The private key, if Nova generated it and it was kept.", "string"),
    }

    def create_call(self, ctx: StepContext) -> CloudCall:
        kwargs: dict[str, Any] = {"name": ctx.properties[NAME]}
        for prop in (PUBLIC_KEY, KEY_TYPE):
            if ctx.properties.get(prop):
                kwargs[prop] = ctx.properties[prop]
        if ctx.properties.get(USER):
            kwargs["user_id"] = ctx.properties[USER]
        return compute(CREATED, "create_keypair", **kwargs)

    def find_call(self, ctx: StepContext) -> CloudCall:
        return compute(FOUND, "get_keypair", ctx.properties[NAME])

    def found(self, ctx: StepContext, answer: Any) -> Mapping[str, Any] | None:
        return answer if isinstance(answer, Mapping) else None

    def get_call(self, physical_id: str) -> CloudCall | None:
        return compute(FOUND, "get_keypair", physical_id)

    def delete_call(self, physical_id: str) -> CloudCall:
        return compute(DELETED, "delete_keypair", physical_id, ignore_missing=True)

    def physical_id_of(self, made: Mapping[str, Any]) -> str:
        return str(made.get("name") or made.get("id"))

    def after_create(self, ctx: StepContext, made: Mapping[str, Any], adopted: bool) -> StepResult:
        data: dict[str, str | None] = {"phase": None, PUBLIC_KEY: made.get("public_key") or None}
        if ctx.properties[SAVE_PRIVATE_KEY] and made.get("private_key"):
            data[PRIVATE_KEY] = str(made["private_key"])
        return Done(physical_id=self.physical_id_of(made), data=data)

    def start_check(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return Failed("Resource not created")
        return call("check", compute(FOUND, "get_keypair", ctx.physical_id))

    def check_other(self, action: Action, ctx: StepContext, step: str) -> StepResult:
        if action is Action.CHECK:
            answer = ctx.answers.get(FOUND)
            if answer is None:
                return self.start_check(ctx)
            if answer.error is not None:
                return cloud_failure(answer.error)
        return Done(data={"phase": None})

    def reference_id(self, physical_id: str | None, data: Mapping[str, str], *, resource_name: str) -> Any:
        return physical_id  # Heat's key pair is referred to by its id (its name), None before

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if name == PRIVATE_KEY:
            return data.get(PRIVATE_KEY, "") if properties.get(SAVE_PRIVATE_KEY) else ""
        return str(properties.get(PUBLIC_KEY) or data.get(PUBLIC_KEY) or None)
