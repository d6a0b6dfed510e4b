"""Stream, consumer and subject names: one prefix, no overlaps, safe tokens."""

from __future__ import annotations

import pytest

from libs.messaging.subjects import SERVICES, Names, principal_token, token_value


def _matches(pattern: str, subject: str) -> bool:
    p, s = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(s) > i
        if i >= len(s) or (token != "*" and token != s[i]):
            return False
    return len(p) == len(s)


def test_every_name_carries_the_prefix() -> None:
    names = Names("ember_t42")
    for stream in names.streams:
        assert stream.name.startswith("EMBER_T42_")
        assert all(s.startswith("ember_t42.") for s in stream.subjects)
    for consumer in names.consumers:
        assert consumer.stream in {s.name for s in names.streams}
        stream = next(s for s in names.streams if s.name == consumer.stream)
        assert any(_matches(pat, consumer.filter_subject.replace(">", "x")) for pat in stream.subjects)


def test_streams_do_not_overlap() -> None:
    names = Names()
    samples = [names.plan("p", "s"), names.work("s"), names.events("p", "s"), names.hooks("p", "s", "r"),
               names.scale("p", "s", "g"), names.deployments("p", "srv"), names.control_ping("worker"),
               names.signal("p", "s", "r")]
    for subject in samples:
        owners = [st.name for st in names.streams if any(_matches(p, subject) for p in st.subjects)]
        assert len(owners) <= 1, (subject, owners)
    # Scale requests and control pings are core NATS request/reply: no stream keeps them.
    assert not any(_matches(p, names.scale("p", "s", "g")) for st in names.streams for p in st.subjects)
    # A deployments push is core NATS too: the agent polls as well, so a lost push costs an interval.
    assert not any(_matches(p, names.deployments("p", "srv")) for st in names.streams for p in st.subjects)


def test_design_subjects_with_the_default_prefix() -> None:
    names = Names()
    assert names.hooks("demo", "abc", "server") == "ember.hooks.demo.abc.server"
    assert names.events("demo", "abc") == "ember.events.demo.abc"
    assert names.scale("demo", "abc", "asg") == "ember.scale.demo.abc.asg"
    assert names.deployments("demo", "srv-1") == "ember.deployments.demo.srv-1"
    assert _matches(names.project_deployments("demo"), names.deployments("demo", "srv-1"))
    assert names.signal("demo", "abc", "deploy") == "ember.signal.demo.abc.deploy"
    assert _matches(names.project_signals("demo"), names.signal("demo", "abc", "deploy"))
    assert not _matches(names.project_signals("demo"), names.signal("demo2", "abc", "deploy"))
    assert _matches(names.deployment_signals.filter_subject, names.signal("demo", "abc", "deploy"))


@pytest.mark.parametrize(("project", "stack", "resource"), [
    ("demo", "abc", "deploy"), ("a.b", "s", "r"), ("p", "s", "my deploy.1"), ("p", "s", "50%2E"),
    ("p", "s", "*"), ("p", "s", "")])
def test_a_signal_subject_reads_back_as_its_tokens(project: str, stack: str, resource: str) -> None:
    names = Names("ember_t")
    parts = names.signal_parts(names.signal(project, stack, resource))
    assert parts == (principal_token(project), principal_token(stack), principal_token(resource))
    # A name is its token, or the token read back (a name with "%2E" in it has the token of one with "."):
    # what libs/software_signals looks for.
    assert parts is not None and (resource or "_") in (parts[2], token_value(parts[2]))
    assert names.signal_parts(names.scale("p", "s", "r")) is None
    assert names.signal_parts("ember_t.signal.p.s") is None


@pytest.mark.parametrize(("raw", "token"), [("a.b", "a%2Eb"), ("x y", "x%20y"), ("*", "%2A"), ("", "_")])
def test_tokens_cannot_break_subjects(raw: str, token: str) -> None:
    assert Names().work(raw) == f"ember.work.{token}"


def test_probes_reach_the_consumer_of_their_queue() -> None:
    names = Names()
    assert _matches(names.planners.filter_subject, names.plan_probe)
    assert _matches(names.workers.filter_subject, names.work_probe)
    assert _matches(names.notifier_events.filter_subject, names.events_probe)


def test_control_ping_only_for_known_services() -> None:
    assert [Names().control_ping(s) for s in SERVICES] == [f"ember.control.{s}.ping" for s in SERVICES]
    with pytest.raises(ValueError):
        Names().control_ping("scheduler")
