"""Template and environment text to Python data, exactly as Heat's server parses them.

Heat tries JSON first and falls back to YAML 1.1 through PyYAML's safe loader,
so ``010`` is 8, ``yes`` is true and ``1e3`` (no dot) stays a string. Its one
change to the safe loader is that timestamps construct as plain strings. When
the fast C loader fails, Heat parses again with the pure-Python loader only to
get its more helpful error text, and that text is what users see.

Messages are Heat's. The API layer adds Heat's ``"Template not in valid
format: "`` / ``"Environment not in valid format: "`` prefix when the text came
in the request body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from libs.template import budgets, convergence
from libs.template.errors import (
    InvalidEnvironment,
    PathItem,
    RequestLimitExceeded,
    StackValidationFailed,
    TemplateParseError,
    format_path,
)

try:
    from yaml import CSafeLoader as _FastSafeLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as _FastSafeLoader  # type: ignore[assignment]

MAX_TEMPLATE_SIZE = 524288
"""Heat's ``max_template_size`` default (512 KiB), counted in characters of the text."""

VERSION_KEYS = ("HeatTemplateFormatVersion", "heat_template_version", "AWSTemplateFormatVersion")

ENV_SECTIONS = (
    PARAMETERS, RESOURCE_REGISTRY, PARAMETER_DEFAULTS,
    ENCRYPTED_PARAM_NAMES, EVENT_SINKS, PARAMETER_MERGE_STRATEGIES,
) = (
    "parameters", "resource_registry", "parameter_defaults",
    "encrypted_param_names", "event_sinks", "parameter_merge_strategies",
)

# Ember's own sections, beside Heat's (Heat would refuse them; Ember reads Heat's unchanged).
EMBER_ENV_SECTIONS = (CONVERGENCE,) = (convergence.SECTION,)

Source = str | bytes | Mapping[str, Any]


class HeatYamlLoader(_FastSafeLoader):
    """The safe loader with timestamps kept as the text they were written as.

    Heat keeps the timestamp resolver and replaces its constructor (rather than
    dropping the resolver), so even an explicit ``!!timestamp`` tag gives a string.
    """


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    assert isinstance(node, yaml.ScalarNode)
    return loader.construct_scalar(node)


HeatYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def _text(source: str | bytes) -> str:
    # Heat receives text inside a JSON request body, so it never sees bytes.
    return source.decode("utf-8") if isinstance(source, bytes) else source


def check_template_size(text: str, max_size: int = MAX_TEMPLATE_SIZE) -> None:
    """Heat's ``validate_template_limit``: the length of ``str()`` of the template."""
    if len(text) > max_size:
        raise RequestLimitExceeded(
            f"Template size ({len(text)} bytes) exceeds maximum allowed size ({max_size} bytes).")


def parse_template(source: Source, *, max_size: int = MAX_TEMPLATE_SIZE,
                   url: str | None = None) -> dict[str, Any]:
    """Template text (JSON or YAML) to a dict, with Heat's checks and messages.

    An already-parsed map (a JSON object in the request body) is only size-checked,
    against the length of its Python ``str()``, as Heat's API does; the version key
    is then left to the template class. ``url`` names a nested template in the YAML
    error message (Heat: ``[root stack]`` when absent).
    """
    if isinstance(source, Mapping):
        data = dict(source)
        budgets.check_depth(data, "The template")
        check_template_size(str(data), max_size)
        return data
    text = _text(source)
    check_template_size(text, max_size)
    parsed = as_rpc_json(_load_template_text(text, url))
    check_storable(parsed, ())
    if not isinstance(parsed, dict):
        raise TemplateParseError("The template is not a JSON object or YAML mapping.")
    if not any(key in parsed for key in VERSION_KEYS):
        raise TemplateParseError("Template format version not found.")
    return parsed


def check_storable(data: Any, path: Sequence[PathItem]) -> None:
    """Refuse text holding a NUL character, which PostgreSQL cannot store, naming where it is.

    Heat (on MySQL) stores it; a 400 here is better than the database's error later.
    """
    stack: list[tuple[Any, tuple[PathItem, ...]]] = [(data, tuple(path))]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if "\0" in item:
                shown = format_path(where).replace("\0", "\\u0000") or "The value"
                raise StackValidationFailed(f"{shown}: text may not contain a NUL character (\\u0000).")
        elif isinstance(item, Mapping):
            for key, value in item.items():
                stack.append((key, where))
                stack.append((value, (*where, str(key))))
        elif isinstance(item, list):
            stack.extend((value, (*where, index)) for index, value in enumerate(item))


def _json_key(key: Any) -> str:
    # What json.dumps makes of a non-string key.
    if isinstance(key, str):
        return key
    return json.dumps(key) if isinstance(key, (bool, type(None))) else str(key)


def as_rpc_json(value: Any) -> Any:
    """The data as Heat's engine sees it after the API's JSON RPC: every map key a string.

    A YAML ``{1: one}`` reaches Heat's functions as ``{"1": "one"}``, so
    ``map_replace`` replaces ``"1"`` but not ``1`` (observed on Heat).
    """
    if isinstance(value, dict):
        return {_json_key(k): as_rpc_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_rpc_json(v) for v in value]
    return value


def _load_template_text(text: str, url: str | None) -> Any:
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise budgets.too_deep("The template", budgets.current().max_depth) from None
    except ValueError:
        pass
    else:
        budgets.check_depth(parsed, "The template")
        return parsed
    try:
        parsed = _load_yaml(text, HeatYamlLoader, "The template")
    except yaml.YAMLError:
        try:
            # Heat returns this reparse's result when it succeeds, without the
            # None -> {} step below; the two loaders practically never disagree.
            return _reparse_yaml(text, "The template")
        except yaml.YAMLError as exc:
            where = "[root stack]" if url is None else url
            raise TemplateParseError(f"Error parsing template {where} {exc}") from None
    return {} if parsed is None else parsed


def _load_yaml(text: str, yaml_loader: type[Any], what: str) -> Any:
    """PyYAML's load, once the budgets have seen the document's events: the composer
    recurses (in C for the fast loader, where running out of stack is a crash) and
    aliases share what they stand for until something copies it."""
    budgets.check_yaml_events(text, yaml_loader, what)
    return yaml.load(text, Loader=yaml_loader)


def _reparse_yaml(text: str, what: str) -> Any:
    """The pure-Python loader, after the fast one failed: for its error message, so the
    budgets are checked (a second slow pass) only when it loads after all. Its composer
    recursing too deep is a Python error here, not a crash."""
    try:
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise budgets.too_deep(what) from None
    budgets.check_yaml_events(text, yaml.SafeLoader, what)
    return data


def parse_environment(source: Source | None) -> dict[str, Any]:
    """Environment text (always YAML, never tried as JSON first) to a dict.

    A parsed map is only section-checked, as Heat's API does for a JSON object.
    Sections are not defaulted here: see :func:`with_missing_sections`.
    """
    if source is None:
        return {}
    if isinstance(source, Mapping):
        budgets.check_depth(source, "The environment")
        return validate_environment(dict(source))
    text = _text(source)
    try:
        env = _load_yaml(text, HeatYamlLoader, "The environment")
    except yaml.YAMLError:
        try:
            env = _reparse_yaml(text, "The environment")
        except yaml.YAMLError as exc:
            raise InvalidEnvironment(str(exc)) from None
    else:
        if env is None:
            env = {}
    if not isinstance(env, dict):
        raise InvalidEnvironment("The environment is not a valid YAML mapping data type.")
    check_storable(env, ())
    return validate_environment(env)


def validate_environment(env: dict[str, Any]) -> dict[str, Any]:
    """Only Heat's six sections (and Ember's ``convergence``, checked), and none of them null.

    Heat rejects ``parameters:`` with nothing after it rather than reading it as
    empty; heatclient does not, so such a file passes the client and fails here.
    """
    for key, value in env.items():
        if key not in ENV_SECTIONS and key not in EMBER_ENV_SECTIONS:
            raise InvalidEnvironment(f'environment has wrong section "{key}"')
        if value is None:
            raise InvalidEnvironment(f'environment has empty section "{key}"')
    if CONVERGENCE in env:
        convergence.parse(env[CONVERGENCE])
    return env


def with_missing_sections(env: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every absent section present and empty, as Heat's API fills them.

    ``parameter_merge_strategies`` is the one section Heat leaves absent.
    """
    full = dict(env)
    for section in ENV_SECTIONS:
        if section not in full and section != PARAMETER_MERGE_STRATEGIES:
            full[section] = [] if section in (ENCRYPTED_PARAM_NAMES, EVENT_SINKS) else {}
    return full
