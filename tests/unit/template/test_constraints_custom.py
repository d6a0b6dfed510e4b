"""The custom constraints Heat ships without cloud services, and the registry behind them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from libs.template.custom_constraints import (
    CLOUD_CONSTRAINTS,
    CustomConstraintRegistry,
    default_custom_constraints,
    parse_iso8601,
)
from libs.template.errors import UnhandledPythonError

NOW = datetime.datetime(2030, 6, 1, 12, 0, 0)
REGISTRY = default_custom_constraints(now=lambda: NOW)


def test_default_registry_has_heats_common_constraints() -> None:
    assert REGISTRY.names() == sorted([
        "cron_expression", "dns_domain", "dns_name", "expiration", "ip_addr", "ip_or_cidr",
        "iso_8601", "json_string", "mac_addr", "net_cidr", "rel_dns_name", "test_constr", "timezone",
        *CLOUD_CONSTRAINTS])
    assert "ip_addr" in REGISTRY
    # A cloud's constraint passes validation: the resource's first step asks the cloud.
    assert REGISTRY.failure("nova.flavor", "m1.nonesuch") is None
    assert "no.such" not in REGISTRY
    assert ["x"] not in REGISTRY


VALID = [
    *[("ip_addr", v) for v in ("1.1.1.1", "1.0.1.1", "255.255.255.255", "0.0.0.0",
                               "2002:2002::20c:29ff:fe7d:811a", "::1", "2002::", "2002::1", "::",
                               "::ffff:10.0.0.1", "FE80::1")],
    *[("mac_addr", v) for v in ("01:23:45:67:89:ab", "01-23-45-67-89-ab", "0123.4567.89ab",
                                "01:23:45:67:89:AB", "1:2:3:4:5:6", "0123:4567:89ab", "012345-6789ab",
                                "0123456789ab", "123456789ab")],
    *[("net_cidr", v) for v in ("10.0.0.0/24", "6000::/64", "10.0.0.1/24", "0.0.0.0/0", "::/0")],
    *[("ip_or_cidr", v) for v in ("10.0.0.0/24", "1.1.1.1", "255.255.255.255", "6000::/64", "::1",
                                  "2002::1")],
    *[("iso_8601", v) for v in ("2050-01-01", "2050-01-01T23:59:59", "2050-01-01T23:59:59+00:00",
                                "2050-01-01T23:59:59+0000", "2050-01-01 23:59", "2050-01-01T23:59:59Z",
                                "20500101", "2050-1-1", "2050", "2050-01-01T23:59:59.123456",
                                "2050-01-01T23")],
    *[("expiration", v) for v in ("2050-01-01", " 2031-01-01T00:00:00Z ", "", None)],
    *[("timezone", v) for v in ("Asia/Taipei", "UTC", "Europe/Paris", "", None)],
    ("cron_expression", "0 23 * * *"),
    *[("dns_name", v) for v in ("openstack.org.", "openstack.org", "my-host", "a.b.c", "", None)],
    *[("dns_domain", v) for v in ("openstack.org.", "", None)],
    *[("rel_dns_name", v) for v in ("myvm.openstack", "myvm", "", None)],
    *[("json_string", v) for v in ('{"key": "value"}', "[1, 2]", "3", "", None)],
    *[("test_constr", v) for v in (0, 1, 2.5)],
]


@pytest.mark.parametrize(("name", "value"), VALID)
def test_accepts(name: str, value: Any) -> None:
    assert REGISTRY.failure(name, value) is None


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        *[("ip_addr", v, "Invalid IP address") for v in (
            None, 123, "1.1", "1.1.", "1.1.1", "1.1.1.", "1.1.1.256", "invalidate format", "1.a.1.1",
            "2002::2001::1", "2002::g", "2001::0::", "20c:29ff:fe7d:811a", "01.1.1.1", " 1.1.1.1",
            "fe80::1%eth0", "1.1.1.1/32")],
        *[("mac_addr", v, "Invalid MAC address.") for v in (
            "8.8.8.8", "0a-1b-3c-4d-5e-6f-1f", "0a-1b-3c-4d-5e-xx", "01:23-45:67:89:ab", 5, None)],
        ("net_cidr", "::/129", "Invalid net cidr invalid IPNetwork ::/129 "),
        ("net_cidr", "Invalid cidr", "Invalid net cidr invalid IPNetwork Invalid cidr "),
        ("net_cidr", "300.0.0.0/24", "Invalid net cidr invalid IPNetwork 300.0.0.0/24 "),
        ("net_cidr", "10.0.0.0/33", "Invalid net cidr invalid IPNetwork 10.0.0.0/33 "),
        ("net_cidr", "10.0.a.10/24", "Invalid net cidr invalid IPNetwork 10.0.a.10/24 "),
        ("net_cidr", "10.0.0/24", "'10.0.0/24' is not a valid IP subnet"),
        ("net_cidr", "10.0/24", "'10.0/24' is not a valid IP subnet"),
        ("net_cidr", "8.8.8.0/ 24", "'8.8.8.0/ 24' is not a valid IP subnet"),
        ("net_cidr", "8.8.8.8", "'8.8.8.8' is not a valid IP subnet"),
        ("net_cidr", "10", "'10' is not a valid IP subnet"),
        ("net_cidr", "10.0.0.0/255.255.255.0", "'10.0.0.0/255.255.255.0' is not a valid IP subnet"),
        ("net_cidr", "10.0.0.0/024", "'10.0.0.0/024' is not a valid IP subnet"),
        ("net_cidr", "1.2.3.4/24/5", "Invalid net cidr IPAddress() does not support netmasks or subnet "
                                     "prefixes! See documentation for details. "),
        ("net_cidr", 10, "'10' is not a valid IP subnet"),
        ("net_cidr", 300, "Invalid net cidr unexpected type <class 'int'> for addr arg "),
        ("net_cidr", ["a"], "Invalid net cidr unexpected type <class 'list'> for addr arg "),
        ("ip_or_cidr", "10.0.0/24", "'10.0.0/24' is not a valid IP subnet"),
        ("ip_or_cidr", "10.0.0.0/33", "'10.0.0.0/33' is not a valid IP subnet"),
        ("ip_or_cidr", "::/129", "'::/129' is not a valid IP subnet"),
        ("ip_or_cidr", "1.1.1", "'1.1.1' is not a valid IP address"),
        ("ip_or_cidr", "2002::g", "'2002::g' is not a valid IP address"),
        ("ip_or_cidr", "010.1.1.1", "'010.1.1.1' is not an accepted IP address, '10.1.1.1' is recommended"),
        ("ip_or_cidr", "1.1.1.+1", "'1.1.1.+1' is not an accepted IP address, '1.1.1.1' is recommended"),
        ("ip_or_cidr", None, "None is not a valid IP or CIDR"),
        ("ip_or_cidr", 123, "123 is not a valid IP or CIDR"),
        ("ip_or_cidr", ["a"], "'['a']' is not a valid IP address"),
        ("ip_or_cidr", ["/"], "'['/']' is not a valid IP subnet"),
        ("iso_8601", "Fri 13th, 2050", ""),
        ("iso_8601", "2050-13-01", ""),
        ("iso_8601", "205001", ""),
        ("iso_8601", "2050-01-01T23:59:59z", ""),
        ("iso_8601", 2050, ""),
        ("expiration", "Fri 13th, 2050",
         "Expiration Fri 13th, 2050 is invalid: Unable to parse date string 'Fri 13th, 2050'"),
        ("expiration", "1970-01-01", "Expiration 1970-01-01 is invalid: Expiration time is out of date."),
        ("expiration", "2030-06-01T14:00:00+03:00",
         "Expiration 2030-06-01T14:00:00+03:00 is invalid: Expiration time is out of date."),
        ("expiration", "2050-02-30", "Expiration 2050-02-30 is invalid: day is out of range for month"),
        ("expiration", 5, "Expiration 5 is invalid: 'int' object has no attribute 'strip'"),
        ("timezone", "wrong_timezone", "Invalid timezone: 'No time zone found with key wrong_timezone'"),
        ("timezone", "../etc",
         "Invalid timezone: ZoneInfo keys must refer to subdirectories of TZPATH, got: ../etc"),
        ("cron_expression", "60 * * * *",
         "Invalid CRON expression: [60 * * * *] is not acceptable, out of range"),
        ("dns_name", "-openstack.org",
         "'-openstack.org' not in valid format. Reason: Name '-openstack' must not start or end with "
         "a hyphen."),
        ("dns_name", ".openstack.org",
         "'.openstack.org' not in valid format. Reason: Encountered an empty component."),
        ("dns_name", "$openstack.org",
         "'$openstack.org' not in valid format. Reason: Name '$openstack' must be 1-63 characters long, "
         "each of which can only be alphanumeric or a hyphen."),
        ("dns_name", "OpenStack.org",
         "'OpenStack.org' not in valid format. Reason: Name 'OpenStack' must be 1-63 characters long, "
         "each of which can only be alphanumeric or a hyphen."),
        ("dns_name", "openstack.123.",
         "'openstack.123.' not in valid format. Reason: TLD '123' must not be all numeric."),
        ("dns_name", "a" * 256, f"'{'a' * 256}' not in valid format. Reason: '{'a' * 256}' exceeds the 255 "
                                "character FQDN limit"),
        ("dns_domain", "openstack.org", "'openstack.org' must end with '.'."),
        ("dns_domain", "-x.org.",
         "'-x.org.' not in valid format. Reason: Name '-x' must not start or end with a hyphen."),
        ("rel_dns_name", "myvm.openstack.",
         "'myvm.openstack.' is a FQDN. It should be a relative domain name."),
        ("rel_dns_name", "a" * 253, f"'{'a' * 253}' contains '253' characters. Adding a domain name will "
                                    "cause it to exceed the maximum length of a FQDN of '255'."),
        ("rel_dns_name", "my_vm",
         "'my_vm' not in valid format. Reason: Name 'my_vm' must be 1-63 characters long, each of which "
         "can only be alphanumeric or a hyphen."),
        ("json_string", "{'key': 'value'}",
         "JSON string {'key': 'value'} is invalid: Expecting property name enclosed in double quotes: "
         "line 1 column 2 (char 1)"),
        ("json_string", "{", "JSON string { is invalid: Expecting property name enclosed in double quotes: "
                             "line 1 column 2 (char 1)"),
    ],
)
def test_rejects_with_heats_reason(name: str, value: Any, reason: str) -> None:
    expected = f"Error validating value '{value}'" + (f": {reason}" if reason else "")
    assert REGISTRY.failure(name, value) == expected


@pytest.mark.parametrize(
    ("name", "value", "python_type", "message"),
    [
        ("dns_name", 5, "AttributeError", "'int' object has no attribute 'endswith'"),
        ("rel_dns_name", 5, "AttributeError", "'int' object has no attribute 'endswith'"),
        ("json_string", 5, "TypeError", "the JSON object must be str, bytes or bytearray, not int"),
        ("test_constr", "5", "TypeError", "'str' object cannot be interpreted as an integer"),
        ("test_constr", -1, "ValueError", "sleep length must be non-negative"),
    ],
)
def test_python_errors_heat_lets_escape(name: str, value: Any, python_type: str, message: str) -> None:
    with pytest.raises(UnhandledPythonError) as err:
        REGISTRY.failure(name, value)
    assert (err.value.error_type, str(err.value)) == (python_type, message)


def test_registry_plugins_and_unknown_names() -> None:
    registry = CustomConstraintRegistry()
    registry.register("zero", lambda v: None if v == "0" else "not zero")
    registry.register("silent", lambda v: "")
    assert registry.failure("zero", "0") is None
    assert registry.failure("zero", "1") == "Error validating value '1': not zero"
    assert registry.failure("silent", 1) == "Error validating value '1'"
    assert registry.failure("nope", "x") == '"x" does not validate nope (constraint not found)'
    with pytest.raises(UnhandledPythonError) as err:
        registry.failure(["a"], "x")
    assert (err.value.error_type, str(err.value)) == ("TypeError", "unhashable type: 'list'")


def test_registries_are_independent() -> None:
    first, second = default_custom_constraints(), default_custom_constraints()
    first.register("my.own", lambda v: None)
    assert "my.own" in first
    assert "my.own" not in second


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2050-01-01", datetime.datetime(2050, 1, 1, tzinfo=datetime.UTC)),
        ("2050-01-01T23:59:59", datetime.datetime(2050, 1, 1, 23, 59, 59, tzinfo=datetime.UTC)),
        ("2050-01-01T23:59:59.5+0130",
         datetime.datetime(2050, 1, 1, 23, 59, 59, 500000,
                           tzinfo=datetime.timezone(datetime.timedelta(hours=1, minutes=30)))),
        ("2050-01-01T23:59:59-05",
         datetime.datetime(2050, 1, 1, 23, 59, 59, tzinfo=datetime.timezone(-datetime.timedelta(hours=5)))),
        ("2050", datetime.datetime(2050, 1, 1, tzinfo=datetime.UTC)),
        ("2050-02", datetime.datetime(2050, 2, 1, tzinfo=datetime.UTC)),
        ("2050-01-01\n", datetime.datetime(2050, 1, 1, tzinfo=datetime.UTC)),  # `$` allows it
    ],
)
def test_parse_iso8601(text: str, expected: datetime.datetime) -> None:
    assert parse_iso8601(text) == expected
