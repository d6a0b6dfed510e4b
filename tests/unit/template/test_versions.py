"""The version table: every key, date and alias Heat accepts, each with exactly Heat's functions.

The expected function lists are Heat's ``HOTemplate*``/``CfnTemplate`` tables
(heat/engine/hot/template.py, heat/engine/cfn/template.py) as
``GET /template_versions/{v}/functions`` lists them.
"""

from __future__ import annotations

from typing import Any

import pytest

from libs.template import errors, versions
from libs.template.functions import base, hot
from services.api.faults import status_of
from tests.unit.template.function_support import FakeResolver, outcome, parse, spec

HOT_DATES = ["2013-05-23", "2014-10-16", "2015-04-30", "2015-10-15", "2016-04-08", "2016-10-14",
             "2017-02-24", "2017-09-01", "2018-03-02", "2018-08-31", "2021-04-16"]
ALIASES = {"2016-10-14": "newton", "2017-02-24": "ocata", "2017-09-01": "pike",
           "2018-03-02": "queens", "2018-08-31": "rocky", "2021-04-16": "wallaby"}

_2014 = ["get_attr", "get_file", "get_param", "get_resource", "list_join", "resource_facade",
         "str_replace", "Fn::Select"]
_2015_04 = ["get_attr", "get_file", "get_param", "get_resource", "list_join", "repeat",
            "resource_facade", "str_replace", "Fn::Select", "digest"]
_2015_10 = ["get_attr", "get_file", "get_param", "get_resource", "list_join", "repeat",
            "resource_facade", "str_replace", "digest", "str_split"]
_2016_04 = [*_2015_10, "map_merge"]
_2016_10 = [*_2016_04, "yaql", "map_replace", "if"]
_2017_02 = [*_2016_10, "filter", "str_replace_strict"]
_2017_09 = [*_2017_02, "make_url", "list_concat", "str_replace_vstrict", "list_concat_unique",
            "contains"]
# GET /template_versions/{v}/functions (Removed entries are not listed).
FUNCTIONS = {
    "AWSTemplateFormatVersion.2010-09-09": [
        "Fn::FindInMap", "Fn::GetAZs", "Ref", "Fn::GetAtt", "Fn::Select", "Fn::Join", "Fn::Split",
        "Fn::Replace", "Fn::Base64", "Fn::MemberListToMap", "Fn::ResourceFacade", "Fn::If"],
    "HeatTemplateFormatVersion.2012-12-12": [
        "Fn::FindInMap", "Fn::GetAZs", "Ref", "Fn::GetAtt", "Fn::Select", "Fn::Join", "Fn::Split",
        "Fn::Replace", "Fn::Base64", "Fn::MemberListToMap", "Fn::ResourceFacade"],
    "heat_template_version.2013-05-23": [
        "Fn::GetAZs", "get_param", "get_resource", "Ref", "get_attr", "Fn::Select", "Fn::Join",
        "list_join", "Fn::Split", "str_replace", "Fn::Replace", "Fn::Base64",
        "Fn::MemberListToMap", "resource_facade", "Fn::ResourceFacade", "get_file"],
    "heat_template_version.2014-10-16": _2014,
    "heat_template_version.2015-04-30": _2015_04,
    "heat_template_version.2015-10-15": _2015_10,
    "heat_template_version.2016-04-08": _2016_04,
    "heat_template_version.2016-10-14": _2016_10,
    "heat_template_version.2017-02-24": _2017_02,
    "heat_template_version.2017-09-01": _2017_09,
    "heat_template_version.2018-03-02": _2017_09,
    "heat_template_version.2018-08-31": _2017_09,
    "heat_template_version.2021-04-16": _2017_09,
}
# ... and what ?with_condition_func=true appends.
CONDITION_EXTRA = {
    "AWSTemplateFormatVersion.2010-09-09": ["Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or"],
    **{f"heat_template_version.{d}": ["equals", "not", "and", "or"] for d in HOT_DATES[5:]},
}
REMOVED_2014 = ["Fn::GetAZs", "Fn::Join", "Fn::Split", "Fn::Replace", "Fn::Base64",
                "Fn::MemberListToMap", "Fn::ResourceFacade", "Ref"]
# The class each version uses for names whose class changed.
VARIANTS: dict[str, dict[str, type[base.Function]]] = {
    "get_attr": {"2013-05-23": hot.GetAttThenSelect, "2014-10-16": hot.GetAtt,
                 "2015-04-30": hot.GetAtt, "2015-10-15": hot.GetAttAllAttributes},
    "list_join": {"2014-10-16": hot.Join, "2015-04-30": hot.Join, "2015-10-15": hot.JoinMultiple},
    "str_replace": {"2015-04-30": hot.Replace, "2015-10-15": hot.ReplaceJson},
    "repeat": {"2015-04-30": hot.Repeat, "2016-04-08": hot.Repeat, "2016-10-14": hot.RepeatWithMap,
               "2017-02-24": hot.RepeatWithMap, "2017-09-01": hot.RepeatWithNestedLoop,
               "2021-04-16": hot.RepeatWithNestedLoop},
    "if": {"2016-10-14": hot.If, "2018-08-31": hot.If, "2021-04-16": hot.IfNullable},
}


def _names(body: dict[str, Any]) -> list[str]:
    return [f["functions"] for f in body["template_functions"]]


# ---- looking a version up -------------------------------------------------------------

@pytest.mark.parametrize("date", HOT_DATES)
def test_every_hot_date_resolves(date: str) -> None:
    found = versions.lookup({"heat_template_version": date, "resources": {}})
    assert (found.key, found.date, found.kind) == ("heat_template_version", date, "hot")
    assert found.full_name == f"heat_template_version.{date}"


@pytest.mark.parametrize(("date", "alias"), ALIASES.items())
def test_every_alias_resolves_to_its_date(date: str, alias: str) -> None:
    found = versions.lookup({"heat_template_version": alias})
    assert found.date == date
    assert found.aliases == (alias,)
    assert found is versions.lookup({"heat_template_version": date})
    assert versions.by_name(f"heat_template_version.{alias}") is found


@pytest.mark.parametrize(("key", "date"), [("AWSTemplateFormatVersion", "2010-09-09"),
                                           ("HeatTemplateFormatVersion", "2012-12-12")])
def test_cfn_versions_resolve(key: str, date: str) -> None:
    found = versions.lookup({key: date, "Resources": {}})
    assert (found.key, found.date, found.kind, found.aliases) == (key, date, "cfn", ())


def test_dates_without_alias() -> None:
    assert [s.date for s in versions.all_versions() if s.kind == "hot" and not s.aliases] == \
        HOT_DATES[:5]


@pytest.mark.parametrize(("template", "message"), [
    ({"foo": "bar", "Parameters": {}}, "Template version was not provided"),
    ({}, "Template version was not provided"),
    # Only a string counts: an unquoted date read by a YAML 1.1 loader is a date object.
    ({"heat_template_version": 20130523}, "Template version was not provided"),
    ({"AWSTemplateFormatVersion": "2010-09-09", "HeatTemplateFormatVersion": "2012-12-12"},
     "Ambiguous versions (AWSTemplateFormatVersion, HeatTemplateFormatVersion)"),
    ({"heat_template_version": "2012-12-12"},
     '"heat_template_version: 2012-12-12". "heat_template_version" should be one of: '
     "2013-05-23, 2014-10-16, 2015-04-30, 2015-10-15, 2016-04-08, 2016-10-14, 2017-02-24, "
     "2017-09-01, 2018-03-02, 2018-08-31, 2021-04-16, newton, ocata, pike, queens, rocky, wallaby"),
    ({"heat_template_version": "this-ain't-valid"},
     "\"heat_template_version: this-ain't-valid\". \"heat_template_version\" should be one of: "
     "2013-05-23, 2014-10-16, 2015-04-30, 2015-10-15, 2016-04-08, 2016-10-14, 2017-02-24, "
     "2017-09-01, 2018-03-02, 2018-08-31, 2021-04-16, newton, ocata, pike, queens, rocky, wallaby"),
    ({"AWSTemplateFormatVersion": "2012-12-12"},
     '"AWSTemplateFormatVersion: 2012-12-12". "AWSTemplateFormatVersion" should be: 2010-09-09'),
    ({"HeatTemplateFormatVersion": "2010-09-09"},
     '"HeatTemplateFormatVersion: 2010-09-09". "HeatTemplateFormatVersion" should be: 2012-12-12'),
])
def test_version_errors(template: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.InvalidTemplateVersion) as caught:
        versions.lookup(template)
    assert str(caught.value) == f"The template version is invalid: {message}"
    assert caught.value.error_type == "InvalidTemplateVersion"


def test_a_version_key_beside_a_non_string_one_is_not_ambiguous() -> None:
    found = versions.lookup({"heat_template_version": "2016-10-14", "AWSTemplateFormatVersion": 1})
    assert found.date == "2016-10-14"


def test_unknown_api_version_name() -> None:
    with pytest.raises(errors.NotFound) as caught:
        versions.functions_api("heat_template_version.2012-01-01")
    assert str(caught.value) == "Template with version heat_template_version.2012-01-01 not found"
    assert (caught.value.error_type, status_of(caught.value)) == ("NotFound", 404)
    with pytest.raises(errors.NotFound):
        versions.by_name("nonsense")


# ---- the API bodies --------------------------------------------------------------------

def test_template_versions_api() -> None:
    expected = [
        {"version": "AWSTemplateFormatVersion.2010-09-09", "type": "cfn", "aliases": []},
        {"version": "HeatTemplateFormatVersion.2012-12-12", "type": "cfn", "aliases": []},
        *({"version": f"heat_template_version.{d}", "type": "hot",
           "aliases": [f"heat_template_version.{ALIASES[d]}"] if d in ALIASES else []}
          for d in HOT_DATES),
    ]
    assert versions.template_versions_api() == {"template_versions": expected}
    assert list(versions.template_versions_api()["template_versions"][0]) == [
        "version", "type", "aliases"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_api_lists_heats_functions(name: str) -> None:
    assert _names(versions.functions_api(name)) == FUNCTIONS[name]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_api_with_condition_functions(name: str) -> None:
    listed = _names(versions.functions_api(name, with_condition_func=True))
    assert listed == FUNCTIONS[name] + CONDITION_EXTRA.get(name, [])


@pytest.mark.parametrize(("alias", "date"), [(a, d) for d, a in ALIASES.items()])
def test_functions_api_by_alias(alias: str, date: str) -> None:
    assert versions.functions_api(f"heat_template_version.{alias}", True) == \
        versions.functions_api(f"heat_template_version.{date}", True)


def test_cfn_ref_is_described_as_a_parameter_reference_among_conditions() -> None:
    plain = {f["functions"]: f["description"]
             for f in versions.functions_api("AWSTemplateFormatVersion.2010-09-09")["template_functions"]}
    with_conditions = {f["functions"]: f["description"] for f in versions.functions_api(
        "AWSTemplateFormatVersion.2010-09-09", True)["template_functions"]}
    cfn = pytest.importorskip("libs.template.functions.cfn")
    assert plain["Ref"] == versions.describe(cfn.Ref)
    assert with_conditions["Ref"] == versions.describe(cfn.ParamRef)


def test_every_listed_function_has_a_one_line_description() -> None:
    for spec_ in versions.all_versions():
        for entry in versions.functions_api(spec_.full_name, True)["template_functions"]:
            description = entry["description"]
            assert description, entry
            assert "\n" not in description


@pytest.mark.parametrize(("doc", "summary"), [
    ("One line.", "One line."),
    ("Summary.\n\nMore text.", "Summary."),
    ("Two lines\nwith no blank line.", ""),
])
def test_describe_takes_the_summary_as_pydoc_does(doc: str, summary: str) -> None:
    cls = type("F", (hot.GetParam,), {"__doc__": doc})
    assert versions.describe(cls) == summary


# ---- the tables themselves -----------------------------------------------------------

@pytest.mark.parametrize("date", HOT_DATES)
def test_hot_function_classes(date: str) -> None:
    functions = spec(date).functions
    for name, by_date in VARIANTS.items():
        if date in by_date:
            assert functions[name] is by_date[date], name
    removed = {n for n, c in functions.items() if c is hot.Removed}
    if date == "2013-05-23":
        assert removed == set()
    elif date < "2015-10-15":
        assert removed == set(REMOVED_2014)
    else:
        assert removed == {*REMOVED_2014, "Fn::Select"}


@pytest.mark.parametrize("date", HOT_DATES)
def test_hot_condition_tables(date: str) -> None:
    table = spec(date).condition_functions
    if date < "2016-10-14":
        assert table == {}
        return
    condition_names = {"get_param", "equals", "not", "and", "or"}
    if date >= "2017-09-01":
        condition_names |= {"yaql", "contains"}
    assert {n for n, c in table.items() if c not in (base.Invalid, hot.Removed)} == condition_names
    for name, cls in spec(date).functions.items():
        if name not in condition_names:
            # Heat keeps Removed there so the version-naming error still applies.
            assert table[name] is (hot.Removed if cls is hot.Removed else base.Invalid), name


def test_cfn_tables() -> None:
    aws = versions.by_name("AWSTemplateFormatVersion.2010-09-09")
    heat = versions.by_name("HeatTemplateFormatVersion.2012-12-12")
    assert "Fn::If" in aws.functions and "Fn::If" not in heat.functions
    assert heat.condition_functions == {}
    assert {n for n, c in aws.condition_functions.items() if c is not base.Invalid} == {
        "Fn::Equals", "Ref", "Fn::FindInMap", "Fn::Not", "Fn::And", "Fn::Or"}
    assert aws.condition_functions["Fn::If"] is base.Invalid


@pytest.mark.parametrize("date", HOT_DATES)
def test_hot_sections_and_keys(date: str) -> None:
    s = spec(date)
    newton = date >= "2016-10-14"
    assert s.sections == ("heat_template_version", "description", "parameter_groups", "parameters",
                          "resources", "outputs", "__undefined__") + (("conditions",) if newton else ())
    assert s.resource_keys == ("type", "properties", "metadata", "depends_on", "deletion_policy",
                               "update_policy", "description") + (
        ("external_id", "condition") if newton else ())
    assert s.output_keys == ("description", "value") + (("condition",) if newton else ())
    lower = {"delete": "Delete", "retain": "Retain", "snapshot": "Snapshot"} if newton else {}
    assert dict(s.deletion_policies) == {"Delete": "Delete", "Retain": "Retain",
                                         "Snapshot": "Snapshot", **lower}
    assert s.param_modulo == (date >= "2017-02-24")
    assert s.param_tags == (date >= "2018-03-02")


def test_cfn_sections_and_keys() -> None:
    aws = versions.by_name("AWSTemplateFormatVersion.2010-09-09")
    heat = versions.by_name("HeatTemplateFormatVersion.2012-12-12")
    common = ("AWSTemplateFormatVersion", "HeatTemplateFormatVersion", "Description", "Mappings",
              "Parameters", "Resources", "Outputs")
    assert aws.sections == (*common, "Conditions")
    assert heat.sections == common
    assert aws.resource_keys[-1] == "Condition" and "Condition" not in heat.resource_keys
    assert aws.output_keys == ("Description", "Value", "Condition")
    assert heat.output_keys == ("Description", "Value")
    for s in (aws, heat):
        assert dict(s.deletion_policies) == {"Delete": "Delete", "Retain": "Retain",
                                             "Snapshot": "Snapshot"}
        assert not s.param_modulo and not s.param_tags


def test_parse_context_carries_the_tables() -> None:
    s = spec("2016-10-14")
    ctx = s.parse_context()
    assert (ctx.functions, ctx.condition_functions, ctx.version) == (
        s.functions, s.condition_functions, "heat_template_version.2016-10-14")
    assert ctx.resolver is None and not ctx.in_condition


# ---- removed functions name the version --------------------------------------------------

@pytest.mark.parametrize("date", HOT_DATES[1:])
@pytest.mark.parametrize("name", [*REMOVED_2014, "Fn::Select"])
def test_removed_functions_fail_naming_the_version(date: str, name: str) -> None:
    if name == "Fn::Select" and date < "2015-10-15":
        return
    kind, got = outcome({name: "x"}, date, FakeResolver())
    assert (kind, got) == ("error", f"StackValidationFailed: outputs.o.value.{name}: The template "
                                    f"version is invalid: The function {name} is not supported "
                                    "in this version of HOT.")


def test_removed_function_parses_to_removed() -> None:
    assert isinstance(parse({"Ref": "x"}, "2014-10-16"), hot.Removed)

