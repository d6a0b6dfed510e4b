"""HOT's intrinsic functions, every variant any ``heat_template_version`` uses.

Which name maps to which class in which version is data in :mod:`libs.template.versions`;
the classes live in modules by concept and are gathered here.
"""

from __future__ import annotations

from libs.template.functions.base import condition_holds
from libs.template.functions.hot_collections import (
    Contains,
    Filter,
    ListConcat,
    ListConcatUnique,
    MapMerge,
    MapReplace,
)
from libs.template.functions.hot_conditions import (
    And,
    Equals,
    If,
    IfNullable,
    Not,
    Or,
)
from libs.template.functions.hot_refs import (
    UNKNOWN,
    GetAtt,
    GetAttAllAttributes,
    GetAttThenSelect,
    GetFile,
    GetParam,
    GetResource,
    Removed,
    ResourceFacade,
    select_path,
)
from libs.template.functions.hot_repeat import Repeat, RepeatWithMap, RepeatWithNestedLoop
from libs.template.functions.hot_strings import (
    Digest,
    Join,
    JoinMultiple,
    Replace,
    ReplaceJson,
    ReplaceJsonStrict,
    ReplaceJsonVeryStrict,
    StrSplit,
    json_text,
)
from libs.template.functions.hot_url import MakeURL
from libs.template.functions.hot_yaql import Yaql

__all__ = [
    "UNKNOWN",
    "And",
    "Contains",
    "Digest",
    "Equals",
    "Filter",
    "GetAtt",
    "GetAttAllAttributes",
    "GetAttThenSelect",
    "GetFile",
    "GetParam",
    "GetResource",
    "If",
    "IfNullable",
    "Join",
    "JoinMultiple",
    "ListConcat",
    "ListConcatUnique",
    "MakeURL",
    "MapMerge",
    "MapReplace",
    "Not",
    "Or",
    "Removed",
    "Repeat",
    "RepeatWithMap",
    "RepeatWithNestedLoop",
    "Replace",
    "ReplaceJson",
    "ReplaceJsonStrict",
    "ReplaceJsonVeryStrict",
    "ResourceFacade",
    "StrSplit",
    "Yaql",
    "condition_holds",
    "json_text",
    "select_path",
]
