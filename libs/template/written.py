"""What a template says as written, found without parsing it: whether a snippet calls a function.

Parsing a group's nested template of 10^5 members to learn that none of them reads
another resource costs seconds; looking for the function's key in the snippet's
JSON costs milliseconds. A string that spells the key is not taken for it (its
quotes are escaped in the JSON); a map key that spells it is, which can only
make the caller parse what it need not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

# The functions that read another resource of the stack (its reference, its attributes, or
# only its place before this one), in either dialect.
READING = ("get_resource", "get_attr", "depends_on", "Ref", "Fn::GetAtt", "DependsOn")
# Those that read its attributes.
ATTRIBUTE_READING = ("get_attr", "Fn::GetAtt")


def mentions(snippet: Any, keys: Iterable[str]) -> bool:
    """Whether any of ``keys`` may be a key somewhere in ``snippet`` (False: it is certainly not)."""
    try:
        text = orjson.dumps(snippet, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return True  # not plain data: parse it
    return any(orjson.dumps(key) + b":" in text for key in keys)
