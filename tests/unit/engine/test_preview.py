"""Create preview: what would be made, in order, with what the template can already tell."""

from __future__ import annotations

from libs.engine.preview import create_preview
from libs.resources.nesting import Expansion
from libs.resources.registry import default_registry
from libs.template.request import StackRequest, load

TEMPLATE = """
heat_template_version: 2016-10-14
parameters:
  size: {type: number, default: 3}
resources:
  server:
    type: OS::Heat::TestResource
    properties:
      value: {str_replace: {template: web-N, params: {N: {get_param: size}}}}
      update_replace_value: {get_attr: [net, output]}
  net:
    type: OS::Heat::TestResource
    properties: {value: private}
"""


def test_create_preview_orders_and_resolves_what_it_can() -> None:
    loaded = load(StackRequest(template=TEMPLATE), stack_name="p", stack_id=None, project_id="demo")
    planned = create_preview(loaded, Expansion(default_registry(), "demo"), stack_name="p")
    assert [p.name for p in planned.resources] == ["net", "server"]
    net, server = planned.resources
    assert server.type == "OS::Heat::TestResource"
    # Every property of the schema, defaults filled in, typed as the action would get them.
    assert server.properties["value"] == "web-3"
    assert server.properties["update_replace_value"] == ""  # an attribute of what does not exist: null
    assert server.properties["wait_secs"] == 0
    assert server.attributes == {"output": None}
    assert server.requires == ("net",) and net.required_by == ("server",)


NESTING = """
heat_template_version: 2016-10-14
resources:
  a:
    type: child.yaml
    properties: {x: hi, l: [p, q]}
  g:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def: {type: child.yaml, properties: {x: "m%index%"}}
"""
CHILD = """
heat_template_version: 2016-10-14
parameters:
  x: {type: string}
  l: {type: comma_delimited_list, default: []}
resources:
  v:
    type: OS::Heat::Value
    properties: {value: {list_join: ["-", [{get_param: x}, {list_join: ["+", {get_param: l}]}]]}}
"""


def test_create_preview_expands_provider_templates_and_groups_recursively() -> None:
    loaded = load(StackRequest(template=NESTING, files={"child.yaml": CHILD}), stack_name="p", stack_id=None,
                  project_id="demo")
    planned = create_preview(loaded, Expansion(default_registry(), "demo"), stack_name="p")
    shown = [(stack.name, stack.parent_resource, r.name, r.properties.get("value"))
             for stack, r in planned.flattened()]
    assert shown == [
        ("p", None, "a", None), ("p-a", "a", "v", "hi-p+q"),
        ("p", None, "g", None),
        ("p-g", "g", "0", None), ("p-g-0", "0", "v", "m0-"),
        ("p-g", "g", "1", None), ("p-g-1", "1", "v", "m1-"),
    ]
