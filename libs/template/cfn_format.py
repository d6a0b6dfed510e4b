"""What is specific to CloudFormation-format templates, intrinsic functions aside.

Heat reads two CFN dialects: ``AWSTemplateFormatVersion: 2010-09-09`` (with
``Conditions``) and the older ``HeatTemplateFormatVersion: 2012-12-12``
(without). Both keep CFN's capitalised names everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

AWS_VERSION_KEY = "AWSTemplateFormatVersion"
HEAT_VERSION_KEY = "HeatTemplateFormatVersion"
VERSION_KEYS = (AWS_VERSION_KEY, HEAT_VERSION_KEY)
# The one version value each key accepts.
VERSIONS: Mapping[str, str] = {AWS_VERSION_KEY: "2010-09-09", HEAT_VERSION_KEY: "2012-12-12"}

DESCRIPTION, MAPPINGS, PARAMETERS, RESOURCES, OUTPUTS, CONDITIONS = (
    "Description", "Mappings", "Parameters", "Resources", "Outputs", "Conditions",
)

# Either version key may head either dialect: Heat lists both among the sections.
HEAT_SECTIONS = (*VERSION_KEYS, DESCRIPTION, MAPPINGS, PARAMETERS, RESOURCES, OUTPUTS)
SECTIONS = (*HEAT_SECTIONS, CONDITIONS)

(RES_TYPE, RES_PROPERTIES, RES_METADATA, RES_DEPENDS_ON, RES_DELETION_POLICY,
 RES_UPDATE_POLICY, RES_DESCRIPTION, RES_CONDITION) = (
    "Type", "Properties", "Metadata", "DependsOn", "DeletionPolicy",
    "UpdatePolicy", "Description", "Condition",
)
HEAT_RESOURCE_KEYS = (RES_TYPE, RES_PROPERTIES, RES_METADATA, RES_DEPENDS_ON,
                      RES_DELETION_POLICY, RES_UPDATE_POLICY, RES_DESCRIPTION)
RESOURCE_KEYS = (*HEAT_RESOURCE_KEYS, RES_CONDITION)

OUTPUT_VALUE, OUTPUT_DESCRIPTION, OUTPUT_CONDITION = "Value", "Description", "Condition"
HEAT_OUTPUT_KEYS = (OUTPUT_DESCRIPTION, OUTPUT_VALUE)
OUTPUT_KEYS = (*HEAT_OUTPUT_KEYS, OUTPUT_CONDITION)

# Template spelling -> canonical policy. Unlike HOT from 2016-10-14, CFN never
# accepts the lowercase spellings.
DELETION_POLICIES: Mapping[str, str] = {"Delete": "Delete", "Retain": "Retain", "Snapshot": "Snapshot"}

PSEUDO_STACK_ID, PSEUDO_STACK_NAME, PSEUDO_REGION = "AWS::StackId", "AWS::StackName", "AWS::Region"
PSEUDO_PARAMETERS = frozenset({PSEUDO_STACK_ID, PSEUDO_STACK_NAME, PSEUDO_REGION})
# Heat has no regions of its own: AWS::Region is always this default, and a
# value outside REGIONS would fail its AllowedValues constraint.
DEFAULT_REGION = "ap-southeast-1"
REGIONS = ("us-east-1", "us-west-1", "us-west-2", "sa-east-1", "eu-west-1",
           "ap-southeast-1", "ap-northeast-1")

# Fn::ResourceFacade names the parent's fields in CFN spelling; resolvers answer
# to HOT's (resource_facade), so both formats share one Resolver.facade.
FACADE_FIELDS: Mapping[str, str] = {
    "Metadata": "metadata", "DeletionPolicy": "deletion_policy", "UpdatePolicy": "update_policy",
}


def mappings_section(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``Mappings`` section as ``Fn::FindInMap`` sees it (ParseContext.mappings).

    Heat does not validate this section. It only looks names up in it when
    ``Fn::FindInMap`` resolves, so a malformed section fails there, with
    Python's own lookup error: a list or a string as the section gives a
    TypeError, a missing name a KeyError. An absent or null section is empty.
    """
    section = template.get(MAPPINGS)
    if not section:
        return {}
    if isinstance(section, Mapping):
        return section
    return _Unindexable(section)


class _Unindexable(Mapping[str, Any]):
    """A non-map ``Mappings`` section that fails lookups the way Heat's does."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def __getitem__(self, key: str) -> Any:
        return self._raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0
