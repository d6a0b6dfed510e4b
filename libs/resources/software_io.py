"""A config resource's inputs and outputs properties, and its config as stored.

The declarations are stored as the software config API stores them
(:func:`libs.software_config_io.checked`): a config made by a template and one posted to
``/software_configs`` are the same row. A config resource's properties were checked by the
same schema already, so the one refusal left is an input's default its type refuses, Heat's
``ValueError`` (``Property error: default: ...``), which fails the resource's create.
"""

from __future__ import annotations

import uuid
from typing import Any

from libs.resources.properties import PropSchema
from libs.software_config_io import INPUT_SCHEMA, OUTPUT_SCHEMA, checked

INPUTS = PropSchema("list", "The inputs the config takes.", schema=PropSchema("map", schema=INPUT_SCHEMA))
OUTPUTS = PropSchema("list", "The outputs the config gives back.",
                     schema=PropSchema("map", schema=OUTPUT_SCHEMA))


def stored_body(config: Any, inputs: Any, outputs: Any, options: Any) -> dict[str, Any]:
    """Heat's ``{config, inputs, outputs, options}`` of a config, its declarations as stored
    (raises Heat's ``ValueError`` as an ``UnhandledPythonError``)."""
    return {"config": config, "inputs": checked("inputs", inputs, located=False),
            "outputs": checked("outputs", outputs, located=False), "options": dict(options or {})}


def is_uuid_like(value: Any) -> bool:
    """Whether ``value`` names a config by id (Heat looks such a value up, other text is content)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    bare = value.lower().removeprefix("urn:").removeprefix("uuid:").strip("{}").replace("-", "")
    return parsed.hex == bare
