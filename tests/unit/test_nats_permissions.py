"""The NATS permission table: each service's rules follow from what it uses, a project's from its id."""

from __future__ import annotations

from libs.messaging import permissions, server_auth
from libs.messaging.subjects import SERVICES, Names

N = Names("ember")


def test_a_service_publishes_only_its_subjects_its_streams_api_and_its_consumers() -> None:
    for service in SERVICES:
        row = permissions.uses(N, service)
        rules = permissions.service_permissions(N, service)
        allowed = ("ember.", "$JS.API.", "$JS.ACK.", "_INBOX.ember.api.")
        for subject in rules.publish:
            assert subject.startswith(allowed), (service, subject)
        # Pulls and acks only from its own durable consumers.
        pulled = {s.rsplit(".", 1)[1] for s in rules.publish if s.startswith("$JS.API.CONSUMER.MSG.NEXT.")}
        assert pulled == {c.durable for c in row.consumers}
        assert rules.subscribe[-1] == f"_INBOX.ember.{service}.>"
        assert "_INBOX.>" not in rules.subscribe and ">" not in rules.subscribe


def test_what_each_service_may_not_do() -> None:
    def publishes(service: str) -> tuple[str, ...]:
        return permissions.service_permissions(N, service).publish

    assert N.work_all not in publishes("notifier") and N.plan_all not in publishes("notifier")
    assert not any(s.startswith("$JS.API.CONSUMER.MSG.NEXT") for s in publishes("api"))
    assert N.events_all not in publishes("worker")
    # Agents' answers are the worker's to apply: no other service pulls them.
    for service in SERVICES:
        pulls = any(s.endswith(".EMBER_SIGNALS.deployment-signals") for s in publishes(service))
        assert pulls is (service == "worker"), service
    assert not any(s.startswith(N.prefix + ".work") or ".CONSUMER." in s for s in publishes("observer"))
    assert not any(".STREAM.DELETE." in s or ".PURGE." in s or "DIRECT" in s
                   for service in SERVICES for s in publishes(service))
    # Reading a message by sequence (to set it aside) only in a stream the service consumes.
    for service in SERVICES:
        consumed = {c.stream for c in permissions.uses(N, service).consumers}
        read = {s.rsplit(".", 1)[1] for s in publishes(service) if ".STREAM.MSG." in s}
        assert read <= consumed, service
    assert "$JS.API.STREAM.MSG.GET.EMBER_WORK" not in publishes("api")


def test_a_project_reaches_its_own_subjects_only() -> None:
    rules = permissions.project_permissions(N, "demo")
    assert rules.publish == ("ember.hookclear.demo.>", "ember.scale.demo.>", "ember.signal.demo.>",
                             "$JS.API.CONSUMER.CREATE.EMBER_EVENTS.*.ember.events.demo.>",
                             "$JS.API.CONSUMER.CREATE.EMBER_HOOKS.*.ember.hooks.demo.>",
                             "$JS.API.CONSUMER.CREATE.EMBER_DRIFT.*.ember.drift.demo.>")
    assert rules.subscribe == ("ember.events.demo.>", "ember.hooks.demo.>", "ember.drift.demo.>",
                               "ember.deployments.demo.>", "_INBOX.ember.project.demo.>")
    assert not rules.allow_responses
    # A project id is one subject token, escaped as in its subjects: "a.b" cannot reach "a".
    assert permissions.project_permissions(N, "a.b").subscribe[0] == "ember.events.a%2Eb.>"
    assert N.events("a.b", "s").startswith("ember.events.a%2Eb.")


def test_the_rendered_configuration() -> None:
    text = server_auth.render(server_auth.users(N, {}, ["demo"], from_env=True))
    assert '{user: "observer", password: $EMBER_NATS_PASSWORD_OBSERVER' in text
    # Nothing to publish is a deny of everything (an empty allow list would allow all).
    mute = server_auth.User("mute", "pw", permissions.Permissions(publish=(), subscribe=("a.b",)))
    assert 'publish: {deny: [">"]}' in server_auth.render([mute])
    assert '{user: "project.demo", password: $EMBER_NATS_PASSWORD_PROJECT_DEMO' in text
    assert "no_auth_user" not in text
    literal = server_auth.render(server_auth.users(N, {u: f"pw-{u}" for u in (*SERVICES, "admin")}))
    assert 'password: "pw-api"' in literal


def test_generated_passwords_read_as_strings_from_the_environment() -> None:
    for _ in range(50):
        password = server_auth.new_password()
        assert password[0].isalpha() and password.isalnum() and len(password) > 30
