"""What a deployment hands its server for one action: the derived config (pure).

A derived config is the deployment's config with every input given its value: the
declared inputs (the deployment's ``input_values``, else their defaults), the values no
input declares (as ``String`` inputs), and the ``deploy_*`` inputs that tell the agent
where it runs and how to answer. It also carries :func:`config_hash`, the SHA-256 of all
of that data and of its id, so an agent that polls or is sent the same derived config again
can tell it has run it already, while another run of the same data (an update back to
earlier inputs, a second SUSPEND, a failed deployment made again) is a new config with a new
id, which the agent runs: an agent keeps every hash it ran for good.

How an agent answers depends on ``signal_transport``. Ember takes Heat's answers on its API's
resource signal URL, so each of Heat's transports but ``NO_SIGNAL`` gives that URL as
``deploy_signal_id`` with the verb ``POST``: heat-config-notify, and ``ember agent``, post
there whatever the transport says (Heat's CFN_SIGNAL is the same shape; TEMP_URL_SIGNAL's
Swift object, and ZAQAR_SIGNAL's queue, Ember has not). The URL is signed with the
deployment's stack user (:mod:`libs.resources.stack_user`), so it needs no token, as Heat's
pre-signed CFN URL. ``HEAT_SIGNAL`` and ``ZAQAR_SIGNAL`` add ``deploy_auth_url``,
``deploy_user_id``, ``deploy_password`` and ``deploy_project_id`` as Heat does: that user's
password, for an agent that signals with a token.

``NATS_SIGNAL`` is Ember's own (Heat has none): no URL, but ``deploy_signal_subject``, the
JetStream subject of the resource (``<prefix>.signal.<project>.<stack id>.<resource>``) that
``ember agent`` publishes the same body to; a worker applies it as the API applies a POST
(:mod:`libs.software_signals`). A server that can reach NATS but not the API can answer so;
NATS itself decides who may publish there (the project's integration user), not the stack user.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from libs.resources import stack_user
from libs.resources.stack_user import StackUser
from libs.software_config_io import checked
from libs.template.constraints import AllowedValues


class Transport(enum.StrEnum):
    """How the agent answers (Heat's ``signal_transport``)."""

    CFN_SIGNAL = "CFN_SIGNAL"
    TEMP_URL_SIGNAL = "TEMP_URL_SIGNAL"
    HEAT_SIGNAL = "HEAT_SIGNAL"
    NO_SIGNAL = "NO_SIGNAL"
    ZAQAR_SIGNAL = "ZAQAR_SIGNAL"
    # Ember's own: the agent publishes its answer on the resource's JetStream subject.
    NATS_SIGNAL = "NATS_SIGNAL"


_WITH_CREDENTIALS: Final = frozenset({Transport.HEAT_SIGNAL, Transport.ZAQAR_SIGNAL})
# The values of ``signal_transport``: Heat's, whose refusal lists them, and Ember's own.
HEAT_TRANSPORTS: Final = tuple(str(t) for t in Transport if t is not Transport.NATS_SIGNAL)
TRANSPORT_VALUES: Final = AllowedValues(HEAT_TRANSPORTS, extensions=(str(Transport.NATS_SIGNAL),))


class MissingInput(Exception):
    """A ``get_input`` (STRICT) of an input the deployment has no value for."""

    def __init__(self, name: str) -> None:
        super().__init__(f"The Parameter ({name}) was not provided.")


def deploy_inputs(*, server_id: Any, action: str, stack_path: str, resource_name: str,
                  transport: Transport, signal_url: str | None, project: str,
                  user: StackUser | None = None, signal_subject: str | None = None) -> list[dict[str, Any]]:
    """The ``deploy_*`` inputs of one action, in Heat's order (NATS_SIGNAL's subject last)."""
    given: list[tuple[str, str, Any]] = [
        ("deploy_server_id", "The id of the server the config is deployed to.", server_id),
        ("deploy_action", "The lifecycle action being deployed.", action),
        ("deploy_stack_id", "The stack of the deployment, as <name>/<id>.", stack_path),
        ("deploy_resource_name", "The deployment resource's name in its stack.", resource_name),
        ("deploy_signal_transport", "How the agent answers with the deployment's outputs.", str(transport)),
    ]
    if transport is Transport.NATS_SIGNAL:
        if signal_subject:
            given.append(("deploy_signal_subject", "The NATS subject the agent publishes the outputs to.",
                          signal_subject))
    elif transport is not Transport.NO_SIGNAL and signal_url:
        url = stack_user.signed(signal_url, user) if user is not None else signal_url
        given += [("deploy_signal_id", "Where the agent sends the outputs.", url),
                  ("deploy_signal_verb", "The HTTP method to send the outputs with.", "POST")]
    if transport in _WITH_CREDENTIALS and signal_url:
        # The API the signal URL belongs to authenticates at its /identity/v3 (keystone mode).
        api = signal_url.split("/v1/", 1)[0]
        given += [("deploy_auth_url", "Where the agent authenticates.", f"{api}/identity/v3")]
        if user is not None:
            given += [("deploy_user_id", "The user the agent authenticates as.", user.id),
                      ("deploy_password", "The password the agent authenticates with.", user.secret)]
        given += [("deploy_project_id", "The project the agent authenticates in.", project)]
    return [{"name": name, "description": description, "type": "String", "value": value}
            for name, description, value in given]


def derived_inputs(declared: Sequence[Mapping[str, Any]], input_values: Mapping[str, Any] | None,
                   deploy: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every input with its value: the declared ones, the undeclared values, then ``deploy``.

    Raises Heat's ``ValueError`` (an ``UnhandledPythonError``) for a declared default its type refuses.
    """
    values = dict(input_values or {})
    inputs = checked("inputs", [{**i, "value": values.pop(i["name"], i.get("default"))} for i in declared],
                     located=False)
    inputs += [{"name": name, "type": "String", "value": value} for name, value in values.items()]
    return [*inputs, *(dict(d) for d in deploy)]


def substituted(snippet: Any, inputs: Mapping[str, Any], input_key: str, strict: bool) -> Any:
    """A structured config with each ``{<input_key>: <name>}`` replaced by that input's value.

    A missing input is null, or with ``strict`` raises :class:`MissingInput`.
    """
    if isinstance(snippet, Mapping):
        if len(snippet) == 1:
            [(key, name)] = snippet.items()
            if key == input_key and isinstance(name, str):
                if strict and name not in inputs:
                    raise MissingInput(name)
                return inputs.get(name)
        return {key: substituted(value, inputs, input_key, strict) for key, value in snippet.items()}
    if isinstance(snippet, list | tuple):
        return [substituted(value, inputs, input_key, strict) for value in snippet]
    return snippet


def config_hash(config_id: str, name: str, group: str, body: Mapping[str, Any]) -> str:
    """SHA-256 of all of a derived config's data, as canonical JSON (sorted keys, no spaces)."""
    data = {"id": config_id, "name": name, "group": group, **body}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
