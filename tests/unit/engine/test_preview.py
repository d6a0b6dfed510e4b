"""Create preview: what would be made, in order, with what the template can already tell."""

from __future__ import annotations

from libs.engine.preview import create_preview
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
    planned = create_preview(loaded.definition)
    assert [p.name for p in planned] == ["net", "server"]
    server = planned[1]
    assert server.type == "OS::Heat::TestResource"
    assert server.properties == {"value": "web-3", "update_replace_value": None}
    assert server.requires == ("net",)
