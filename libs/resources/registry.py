"""Which plugin implements which resource type.

A :class:`Registry` is an ordinary object built by whoever needs one
(:func:`default_registry` for the built-in types); importing this module
registers nothing anywhere.
"""

from __future__ import annotations

from libs.resources.base import ResourceType
from libs.template.registry import ResourceRegistry, unknown_type_message


class ResourceTypeNotFound(KeyError):
    """No plugin implements the type (Heat's exception of that name, and its message)."""

    def __init__(self, type_name: str) -> None:
        super().__init__(type_name)
        self.type_name = type_name

    def __str__(self) -> str:
        return unknown_type_message(self.type_name)


class Registry:
    """Resource type names to plugin instances (plugins are stateless: one instance serves all)."""

    # Environments resolved recently, with the builtin types of this registry added: the
    # same stored environment serves every resource of a stack, and adding them copies it.
    _RESOLVING_KEPT = 32

    def __init__(self) -> None:
        self._plugins: dict[str, ResourceType] = {}
        self._resolving: dict[int, tuple[ResourceRegistry, ResourceRegistry]] = {}

    def __getstate__(self) -> dict[str, object]:
        # A registry crosses to the evaluation pool with each job: its cache stays behind.
        return {"_plugins": self._plugins, "_resolving": {}}

    def register(self, cls: type[ResourceType]) -> type[ResourceType]:
        """Add a plugin class; returns it, so it can decorate the class."""
        if cls.type_name in self._plugins:
            raise ValueError(f"Resource type {cls.type_name} is already registered")
        self._plugins[cls.type_name] = cls()
        return cls

    def get(self, type_name: str) -> ResourceType:
        """The plugin for ``type_name``; :class:`ResourceTypeNotFound` (a ``KeyError``) if none is."""
        try:
            return self._plugins[type_name]
        except KeyError:
            raise ResourceTypeNotFound(type_name) from None

    def implementing(self, type_name: str, *, resource_name: str,
                     environment: ResourceRegistry | None) -> ResourceType:
        """The plugin behind a template's type, through the environment's ``resource_registry``.

        ``My::Server: OS::Nova::Server`` keeps ``My::Server`` as the resource's
        type (what Heat shows) and runs the plugin it maps to. A builtin name
        the environment maps elsewhere (``OS::Nova::Server: OS::Heat::None``, or
        to a template) runs what it maps to, as in Heat.
        """
        if environment is not None:
            found = self._with_builtins(environment).resolve(resource_name, type_name)
            if found is not None and found.is_template and found.template is not None:
                from libs.resources.nested import TemplateResource
                return TemplateResource(found.template, type_name, found)
            if found is not None and found.type_name in self._plugins:
                return self._plugins[found.type_name]
        return self.get(type_name)

    def implementation(self, type_name: str, *, resource_name: str,
                       environment: ResourceRegistry | None) -> type[ResourceType] | None:
        """What decides replace or update: the plugin class the name resolves to (None: nothing).

        Heat compares the classes two definitions instantiate, so two names of
        one plugin are one implementation, and so are any two templates (every
        template resource is Heat's ``TemplateResource``).
        """
        try:
            return type(self.implementing(type_name, resource_name=resource_name, environment=environment))
        except KeyError:
            return None

    def _with_builtins(self, environment: ResourceRegistry) -> ResourceRegistry:
        # A stored environment does not know which types are built in; this registry does.
        kept = self._resolving.get(id(environment))
        if kept is not None and kept[0] is environment:
            return kept[1]
        enriched = environment.with_builtin_types(self._plugins)
        if len(self._resolving) >= self._RESOLVING_KEPT:
            self._resolving.pop(next(iter(self._resolving)))
        # The environment itself is kept too, so its id cannot be reused while the entry lives.
        self._resolving[id(environment)] = (environment, enriched)
        return enriched

    def __contains__(self, type_name: object) -> bool:
        return type_name in self._plugins

    def types(self) -> list[str]:
        """Registered type names, sorted as Heat lists them."""
        return sorted(self._plugins)


def default_registry() -> Registry:
    """A registry of the built-in types (the cloud ones ask for their calls as data)."""
    from libs.resources.autoscaling import AutoScalingGroup, ScalingPolicy
    from libs.resources.instance_group import InstanceGroup
    from libs.resources.nested import StackResource
    from libs.resources.neutron.types import NEUTRON_TYPES
    from libs.resources.none import NoneResource
    from libs.resources.random_string import RandomString
    from libs.resources.resource_chain import ResourceChain
    from libs.resources.resource_group import ResourceGroup
    from libs.resources.software_config import CONFIG_TYPES
    from libs.resources.software_deployment import DEPLOYMENT_TYPES
    from libs.resources.test_resource import TestResource
    from libs.resources.value import Value
    from libs.resources.wait_condition import WaitCondition, WaitConditionHandle

    registry = Registry()
    for cls in (NoneResource, TestResource, RandomString, Value, StackResource, ResourceGroup,
                ResourceChain, WaitConditionHandle, WaitCondition, AutoScalingGroup, ScalingPolicy,
                InstanceGroup):
        registry.register(cls)
    from libs.resources.lifecycle_config import LifecycleConfig
    for software_cls in (*CONFIG_TYPES, LifecycleConfig, *DEPLOYMENT_TYPES):
        registry.register(software_cls)
    from libs.resources.deployment_group import DEPLOYMENT_GROUPS
    for group_cls in DEPLOYMENT_GROUPS:
        registry.register(group_cls)
    # Cloud types: their steps ask for openstacksdk calls (libs/cloud/calls.py).
    from libs.resources.compute_types import COMPUTE_TYPES
    for cloud_cls in COMPUTE_TYPES:
        registry.register(cloud_cls)
    for neutron_cls in NEUTRON_TYPES:
        registry.register(neutron_cls)
    return registry
