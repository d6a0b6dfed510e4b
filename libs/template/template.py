"""A parsed template: its version, sections and structural validation (Heat's ``t.validate``).

HOT and CFN differ in key names only at this level, so one class serves both
through a :class:`Dialect`; what differs in behaviour (functions, parameter
schemas) comes from the version table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from libs.template import cfn_format, errors, loader, versions
from libs.template.functions import base


@dataclasses.dataclass(frozen=True)
class Dialect:
    """Section and key names of one template format."""

    description: str
    parameters: str
    parameter_groups: str | None
    resources: str
    outputs: str
    conditions: str
    mappings: str | None
    res_type: str
    res_properties: str
    res_metadata: str
    res_depends_on: str
    res_deletion_policy: str
    res_update_policy: str
    res_description: str
    res_condition: str
    res_external_id: str | None
    out_value: str
    out_description: str
    out_condition: str


HOT = Dialect(
    description="description", parameters="parameters", parameter_groups="parameter_groups",
    resources="resources", outputs="outputs", conditions="conditions", mappings=None,
    res_type="type", res_properties="properties", res_metadata="metadata",
    res_depends_on="depends_on", res_deletion_policy="deletion_policy",
    res_update_policy="update_policy", res_description="description", res_condition="condition",
    res_external_id="external_id", out_value="value", out_description="description",
    out_condition="condition",
)

CFN = Dialect(
    description="Description", parameters="Parameters", parameter_groups=None,
    resources="Resources", outputs="Outputs", conditions="Conditions", mappings="Mappings",
    res_type="Type", res_properties="Properties", res_metadata="Metadata",
    res_depends_on="DependsOn", res_deletion_policy="DeletionPolicy",
    res_update_policy="UpdatePolicy", res_description="Description", res_condition="Condition",
    res_external_id=None, out_value="Value", out_description="Description", out_condition="Condition",
)


class Template:
    """One template document. Immutable after construction; no stack needed."""

    def __init__(self, raw: Mapping[str, Any], files: Mapping[str, str] | None = None) -> None:
        self.raw: dict[str, Any] = dict(raw)
        self.version: versions.VersionSpec = versions.lookup(self.raw)
        self.dialect = HOT if self.version.kind == "hot" else CFN
        self.files: dict[str, str] = dict(files or {})
        self._resource_names: frozenset[str] | None = None

    @classmethod
    def load(cls, source: str | bytes | Mapping[str, Any], files: Mapping[str, str] | None = None,
             *, max_size: int = loader.MAX_TEMPLATE_SIZE) -> Template:
        """Parse template text (YAML or JSON, as Heat parses it) or take an already-parsed map."""
        raw = loader.parse_template(source, max_size=max_size)
        return cls(raw, files)

    @property
    def has_conditions(self) -> bool:
        """Whether this version has a conditions section (HOT from 2016-10-14, and CFN)."""
        return bool(self.version.condition_functions)

    # ---- sections ------------------------------------------------------------
    def section(self, name: str | None) -> Any:
        """A section's content; an empty (null) section reads as empty, as in Heat."""
        if name is None:
            return {}
        value = self.raw.get(name)
        return value if value is not None else {}

    @property
    def description(self) -> str:
        """What stack show and previews say: Heat's "No description" for none, an empty or a null one."""
        value = self.raw.get(self.dialect.description)
        return str(value) if value else "No description"

    @property
    def resources_section(self) -> dict[str, Any]:
        section = self.section(self.dialect.resources)
        if not isinstance(section, Mapping):
            raise errors.StackValidationFailed(
                f'"{self.dialect.resources}" must contain a map of resource maps. '
                f"Found a [{type(section)}] instead")
        return dict(section)

    @property
    def outputs_section(self) -> dict[str, Any]:
        section = self.section(self.dialect.outputs)
        return dict(section) if isinstance(section, Mapping) else {}

    @property
    def mappings(self) -> Mapping[str, Any]:
        return cfn_format.mappings_section(self.raw) if self.version.kind == "cfn" else {}

    def parameter_names(self) -> frozenset[str]:
        section = self.section(self.dialect.parameters)
        return frozenset(section) if isinstance(section, Mapping) else frozenset()

    # ---- parsing -------------------------------------------------------------
    def resource_names(self) -> frozenset[str]:
        # Every parse asks; the template is immutable, so the set is built once
        # (rebuilding it per parse made loading a large template quadratic).
        if self._resource_names is None:
            section = self.section(self.dialect.resources)
            self._resource_names = (frozenset(str(n) for n in section) if isinstance(section, Mapping)
                                    else frozenset())
        return self._resource_names

    def parse_context(self, resolver: base.Resolver | None = None, *,
                      resource_names: frozenset[str] | None = None,
                      has_resource: Callable[[str], bool] | None = None,
                      has_attribute: Callable[[str, Any], bool] | None = None) -> base.ParseContext:
        """With a resolver, ``if`` picks its branch while parsing, as Heat's does.

        ``resource_names`` (default: every resource of the template), ``has_resource``
        and ``has_attribute`` are the stack's, as ParseContext describes.
        """
        return base.ParseContext(
            functions=self.version.functions, condition_functions=self.version.condition_functions,
            version=self.version.full_name, resolver=resolver, mappings=self.mappings,
            parameter_names=self.parameter_names(),
            resource_names=self.resource_names() if resource_names is None else resource_names,
            has_resource=has_resource, has_attribute=has_attribute)

    def parse(self, snippet: Any, path: str, resolver: base.Resolver | None = None, *,
              resource_names: frozenset[str] | None = None,
              has_resource: Callable[[str], bool] | None = None,
              has_attribute: Callable[[str, Any], bool] | None = None) -> Any:
        ctx = self.parse_context(resolver, resource_names=resource_names, has_resource=has_resource,
                                 has_attribute=has_attribute)
        return base.parse(snippet, path, ctx)

    def parse_condition(self, snippet: Any, path: str, resolver: base.Resolver | None = None) -> Any:
        return base.parse(snippet, path, self.parse_context(resolver).for_conditions())

    # ---- structure (Heat's Template.validate) ----------------------------------
    def validate_structure(self) -> None:
        for key in self.raw:
            if key not in self.version.sections:
                raise errors.InvalidTemplateSection(str(key))
        # Heat never checks the outputs' shapes here for a stack (only when it reads a
        # provider template's outputs): the stack's own output validation words them.
        self._validate_resource_shapes()

    def _validate_resource_shapes(self) -> None:
        d = self.dialect
        allowed = set(self.version.resource_keys)
        if self.version.kind == "hot":
            # Heat's HOT class shares one dict between its resource and output key
            # maps, so "value" passes this first check and fails later instead.
            allowed.add("value")
        resources = self.resources_section
        for name in sorted(resources, key=str):
            attrs = resources[name]
            if not attrs:
                raise errors.StackValidationFailed(f"Each resource must contain a {d.res_type} key.")
            if not isinstance(attrs, Mapping):
                raise errors.StackValidationFailed(
                    f'"{d.resources}" must contain a map of resource maps. '
                    f"Found a [{type(attrs)}] instead")
            if self.version.kind == "hot":
                for key in attrs:
                    if key not in allowed:
                        # Heat's lazily translated message is formatted twice, and the second
                        # formatting puts the key where the section's name was.
                        raise errors.StackValidationFailed(
                            f'"%s" is not a valid keyword inside a {key} definition')
            if d.res_type not in attrs:
                raise errors.StackValidationFailed(f"Each resource must contain a {d.res_type} key.")
            if not attrs.get(d.res_type):
                raise errors.StackValidationFailed("Each Resource must contain a Type key.")
