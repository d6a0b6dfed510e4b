"""Custom constraints: the registry behind ``custom_constraint: <name>``, and Heat's common ones.

:func:`default_custom_constraints` registers the constraints Heat ships that
need no cloud service (``ip_addr``, ``net_cidr``, ``cron_expression``...);
resource plugins register theirs (``nova.flavor``) on the same object, which
callers pass to :func:`libs.template.constraints.check`; nothing here is global.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import ipaddress
import json
import re
import zoneinfo
from collections.abc import Callable
from typing import Any

from libs.template.cron import cron_expression
from libs.template.errors import UnhandledPythonError

Validator = Callable[[Any], "str | None"]


class CustomConstraintRegistry:
    """Named validators behind ``custom_constraint: <name>``.

    A validator returns None when the value is acceptable, else the reason
    (what Heat's constraint classes keep in ``_error_message``). The failure
    then reads ``Error validating value '<v>': <reason>``, or only ``Error
    validating value '<v>'`` when the reason is empty, as for ``iso_8601``.
    It may raise :class:`UnhandledPythonError` where Heat's plugin lets a
    Python exception escape.
    """

    def __init__(self) -> None:
        self._validators: dict[str, Validator] = {}

    def register(self, name: str, validator: Validator) -> None:
        self._validators[name] = validator

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._validators

    def names(self) -> list[str]:
        return sorted(self._validators)

    def failure(self, name: Any, value: Any) -> str | None:
        try:
            validator = self._validators.get(name)
        except TypeError as exc:  # an unhashable name ([a, b]) breaks Heat's dict lookup too
            raise UnhandledPythonError("TypeError", str(exc)) from None
        if validator is None:
            return f'"{value}" does not validate {name} (constraint not found)'
        reason = validator(value)
        if reason is None:
            return None
        return f"Error validating value '{value}'" + (f": {reason}" if reason else "")


@functools.cache
def shared_defaults() -> CustomConstraintRegistry:
    """:func:`default_custom_constraints`, one registry for the readers that never register more:
    made anew for each resource's properties it cost a tenth of a big template's check."""
    return default_custom_constraints()


def default_custom_constraints(now: Callable[[], datetime.datetime] | None = None
                               ) -> CustomConstraintRegistry:
    """The constraints Heat registers in ``setup.cfg`` that need no cloud service.

    ``now`` (naive UTC) is what ``expiration`` compares against; it defaults
    to the system clock.
    """
    clock = now or (lambda: datetime.datetime.now(datetime.UTC).replace(tzinfo=None))
    registry = CustomConstraintRegistry()
    registry.register("ip_addr", _ip_addr)
    registry.register("mac_addr", _mac_addr)
    registry.register("net_cidr", _net_cidr)
    registry.register("ip_or_cidr", _ip_or_cidr)
    registry.register("iso_8601", _iso_8601)
    registry.register("expiration", lambda value: _expiration(value, clock))
    registry.register("timezone", _timezone)
    registry.register("cron_expression", cron_expression)
    registry.register("dns_name", _dns_name)
    registry.register("dns_domain", _dns_domain)
    registry.register("rel_dns_name", _rel_dns_name)
    registry.register("json_string", _json_string)
    registry.register("test_constr", _test_constr)
    for name in CLOUD_CONSTRAINTS:
        registry.register(name, _checked_by_the_cloud)
    return registry


# Heat's constraints that look a name or id up in a cloud service. Validation has no cloud
# (it is pure), so they pass here; the resource's first step resolves the value through
# the cloud and fails with Heat's message when the cloud does not know it.
CLOUD_CONSTRAINTS = (
    "nova.flavor", "nova.keypair", "nova.server", "nova.host", "glance.image",
    "cinder.volume", "cinder.snapshot", "cinder.vtype", "cinder.backup", "cinder.qos_specs",
    "neutron.network", "neutron.subnet", "neutron.port", "neutron.router",
    "neutron.security_group", "neutron.subnetpool", "neutron.qos_policy",
    "neutron.address_scope", "neutron.lbaas.loadbalancer", "neutron.port_pair",
    "keystone.project", "keystone.user", "keystone.domain", "keystone.role", "keystone.group",
    "keystone.region", "keystone.service",
)


def _checked_by_the_cloud(value: Any) -> str | None:
    return None


# ---- Heat's common constraints, re-expressed with the standard library --------------------------
# Heat builds these on netaddr, neutron-lib, iso8601 and croniter; only the
# accept/reject decisions and the reasons below are Heat's.

def _strict_ipv4(text: str) -> ipaddress.IPv4Address | None:
    try:  # four plain decimal octets, no leading zeros: inet_pton's rule
        return ipaddress.IPv4Address(text)
    except ValueError:
        return None


def _strict_ipv6(text: str) -> ipaddress.IPv6Address | None:
    if "%" in text:  # inet_pton knows no scope ids
        return None
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _ip_problem(data: Any) -> str | None:
    """neutron-lib's validate_ip_address: None, or its message."""
    invalid = f"'{data}' is not a valid IP address"
    if not isinstance(data, str) or re.search(r"\s", data):
        return invalid
    if ":" in data:
        return None if _strict_ipv6(data) else invalid
    try:  # netaddr's ZEROFILL: each octet through int(), so "010" and "+1" parse too
        zerofilled = ".".join(f"{int(octet):d}" for octet in data.split("."))
    except ValueError:
        zerofilled = data
    address = _strict_ipv4(zerofilled) or _strict_ipv4(data)
    if address is None or data.count(".") != 3:
        return invalid
    if str(address) != data:
        return f"'{data}' is not an accepted IP address, '{address}' is recommended"
    return None


class _NetError(Exception):
    """netaddr refused a network; the text is netaddr's."""


def _host(version: int, text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    return _strict_ipv4(text) if version == 4 else _strict_ipv6(text)


def _network_text(version: int, text: str) -> str | None:
    """netaddr's parse of ``addr[/prefix|/mask]`` in one IP version: "addr/len", or None."""
    address, slash, prefix = text.partition("/")
    host = _host(version, address)
    if host is None:
        return None
    width = 32 if version == 4 else 128
    if not slash:
        return f"{host}/{width}"
    try:
        length = int(prefix)
    except ValueError:
        if "/" in prefix:
            raise _NetError("IPAddress() does not support netmasks or subnet prefixes! "
                            "See documentation for details.") from None
        mask = _host(version, prefix)
        if mask is None:
            return None
        ones = (int(mask) ^ (2 ** width - 1)) + 1
        if ones & (ones - 1) == 0:  # a netmask: leading ones
            length = width - (ones.bit_length() - 1)
        elif (int(mask) + 1) & int(mask) == 0:  # a hostmask: trailing ones
            length = width - int(mask).bit_length()
        else:
            return None
    return f"{host}/{length}" if 0 <= length <= width else None


def _parse_network(text: str) -> tuple[int, str]:
    for version in (4, 6):
        parsed = _network_text(version, text)
        if parsed is not None:
            return version, parsed
    raise _NetError(f"invalid IPNetwork {text}")


def _subnet_problem(data: Any) -> str | None:
    """neutron-lib's validate_subnet: a prefix is required, IPv4 must be canonical."""
    invalid = f"'{data}' is not a valid IP subnet"
    if not isinstance(data, str) or re.search(r"\s", data):
        return invalid
    try:
        version, canonical = _parse_network(data)
    except _NetError:
        return invalid
    return invalid if "/" not in data or (version == 4 and canonical != data) else None


def _classful_prefix(first_octet: Any) -> int:
    octet = int(first_octet)
    if not 0 <= octet <= 255:
        raise IndexError(octet)
    return 8 if octet <= 127 else 16 if octet <= 191 else 24 if octet <= 223 else 4 if octet <= 239 else 32


def _expand_abbreviated_cidr(text: str) -> str:
    """netaddr's cidr_abbrev_to_verbose: "10" -> "10.0.0.0/8", "10.1/16" -> "10.1.0.0/16"."""
    if ":" in text or text == "":
        return text
    try:
        try:
            whole = int(text)
        except ValueError:
            pass
        else:
            return f"{whole}.0.0.0/{_classful_prefix(whole)}"
        part, slash, prefix = text.partition("/")
        if slash:
            try:
                if not 0 <= int(prefix) <= 32:
                    return text
            except ValueError:
                return text
        tokens = part.split(".")
        if len(tokens) > 4:
            return text
        tokens += ["0"] * (4 - len(tokens))
        if not slash:
            try:
                prefix = str(_classful_prefix(tokens[0]))
            except ValueError:
                return text
        return f"{'.'.join(tokens)}/{prefix}"
    except IndexError:
        return text


def _ip_addr(value: Any) -> str | None:
    return "Invalid IP address" if _ip_problem(value) else None


# netaddr's EUI-48 spellings (UNIX, Windows, Cisco, PostgreSQL, bare); like netaddr's, `$`
# lets a trailing newline through.
_MAC_FORMATS = [re.compile(p, re.IGNORECASE) for p in (
    r"^(?:[0-9a-f]{1,2}:){5}[0-9a-f]{1,2}$", r"^(?:[0-9a-f]{1,2}-){5}[0-9a-f]{1,2}$",
    r"^(?:[0-9a-f]{1,4}:){2}[0-9a-f]{1,4}$", r"^(?:[0-9a-f]{1,4}-){2}[0-9a-f]{1,4}$",
    r"^(?:[0-9a-f]{1,4}\.){2}[0-9a-f]{1,4}$", r"^[0-9a-f]{5,6}-[0-9a-f]{5,6}$",
    r"^[0-9a-f]{5,6}:[0-9a-f]{5,6}$", r"^[0-9a-f]{11,12}$",
)]


def _mac_addr(value: Any) -> str | None:
    if isinstance(value, str) and any(p.search(value) for p in _MAC_FORMATS):
        return None
    return "Invalid MAC address."


def _net_cidr(value: Any) -> str | None:
    if not isinstance(value, str):
        # netaddr turns small numbers into classful networks; everything else is a type error.
        try:
            whole = int(value)
            _classful_prefix(whole)
        except OverflowError as exc:
            return f"Invalid net cidr {exc} "
        except (TypeError, ValueError, IndexError):
            return f"Invalid net cidr unexpected type {type(value)} for addr arg "
        return _subnet_problem(value)
    try:
        _parse_network(_expand_abbreviated_cidr(value))
    except _NetError as exc:
        return f"Invalid net cidr {exc} "
    return _subnet_problem(value)


def _ip_or_cidr(value: Any) -> str | None:
    if isinstance(value, str):
        return _subnet_problem(value) if "/" in value else _ip_problem(value)
    if isinstance(value, (list, dict)):  # Heat's `"/" in value` is a membership test on these
        return _subnet_problem(value) if "/" in value else _ip_problem(value)
    return f"{value} is not a valid IP or CIDR"


# pyiso8601's grammar: YYYY[-MM[-DD[(T| )hh[:mm[:ss[.f]]][Z|±hh[:mm]]]]] (also without dashes/colons).
_ISO8601 = re.compile(
    r"(?P<year>[0-9]{4})"
    r"(?:(?:-(?P<monthdash>[0-9]{1,2})|(?P<month>[0-9]{2})(?!$))"
    r"(?:(?:-(?P<daydash>[0-9]{1,2})|(?P<day>[0-9]{2}))"
    r"(?:[ T](?P<hour>[0-9]{2})(?::?(?P<minute>[0-9]{2}))?"
    r"(?::?(?P<second>[0-9]{1,2})(?:[.,](?P<fraction>[0-9]+))?)?"
    r"(?P<tz>Z|(?P<sign>[-+])(?P<tzh>[0-9]{2}):?(?P<tzm>[0-9]{2})?)?)?)?)?$")


def parse_iso8601(text: Any) -> datetime.datetime:
    """oslo's parse_isotime: an aware datetime (UTC when no zone is given), else ValueError."""
    if not isinstance(text, str):
        raise ValueError(f"expected string or bytes-like object, got '{type(text).__name__}'")
    found = _ISO8601.match(text)
    if found is None:
        raise ValueError(f"Unable to parse date string {text!r}")
    g = {k: v for k, v in found.groupdict().items() if v is not None}
    zone: datetime.tzinfo = datetime.UTC
    if "sign" in g:
        sign = -1 if g["sign"] == "-" else 1
        hours, minutes = int(g["tzh"]), int(g.get("tzm", 0))
        zone = datetime.timezone(datetime.timedelta(hours=sign * hours, minutes=sign * minutes),
                                 f"{g['sign']}{hours:02d}:{minutes:02d}")
    fraction = decimal.Decimal(f"0.{g.get('fraction', 0)}") * decimal.Decimal("1000000.0")
    return datetime.datetime(
        int(g["year"]), int(g.get("month", g.get("monthdash", 1))), int(g.get("day", g.get("daydash", 1))),
        int(g.get("hour", 0)), int(g.get("minute", 0)), int(g.get("second", 0)), int(fraction),
        tzinfo=zone)


def _iso_8601(value: Any) -> str | None:
    try:
        parse_iso8601(value)
    except ValueError:
        return ""  # Heat gives no reason for this one
    return None


def _expiration(value: Any, now: Callable[[], datetime.datetime]) -> str | None:
    if not value:
        return None
    try:
        if not isinstance(value, str):
            raise AttributeError(f"'{type(value).__name__}' object has no attribute 'strip'")
        moment = parse_iso8601(value.strip())
        offset = moment.utcoffset() or datetime.timedelta()
        if moment.replace(tzinfo=None) - offset > now():
            return None
        raise ValueError("Expiration time is out of date.")
    except (ValueError, AttributeError) as exc:
        return f"Expiration {value} is invalid: {exc}"


def _timezone(value: Any) -> str | None:
    if not value:
        return None
    try:
        zoneinfo.ZoneInfo(value)
    except Exception as exc:  # ZoneInfoNotFoundError, ValueError, TypeError: Heat catches all
        return f"Invalid timezone: {exc}"
    return None


def _json_string(value: Any) -> str | None:
    if not value:
        return None
    if not isinstance(value, str):
        raise UnhandledPythonError(
            "TypeError", f"the JSON object must be str, bytes or bytearray, not {type(value).__name__}")
    try:
        json.loads(value)
    except json.JSONDecodeError as exc:
        return f"JSON string {value} is invalid: {exc}"
    return None


def _test_constr(value: Any) -> str | None:
    # Heat's test fixture sleeps `value` seconds (through the client plugin
    # machinery); Ember does not sleep, but keeps what time.sleep() rejects.
    if not isinstance(value, (int, float)):
        raise UnhandledPythonError(
            "TypeError", f"'{type(value).__name__}' object cannot be interpreted as an integer")
    if value < 0:
        raise UnhandledPythonError("ValueError", "sleep length must be non-negative")
    return None


_FQDN_MAX = 255
_DNS_LABEL = re.compile(r"[a-z0-9-]{1,63}$")


def _dns_format_problem(data: Any) -> str | None:
    """Heat's validate_dns_format; a non-string crashes it exactly where Heat's crashes."""
    if not data:
        return None
    if not isinstance(data, str):
        raise UnhandledPythonError(
            "AttributeError", f"'{type(data).__name__}' object has no attribute 'endswith'")
    trimmed = data[:-1] if data.endswith(".") else data
    if len(trimmed) > _FQDN_MAX:
        return f"'{trimmed}' exceeds the {_FQDN_MAX} character FQDN limit"
    names = trimmed.split(".")
    for name in names:
        if not name:
            return "Encountered an empty component."
        if name.startswith("-") or name.endswith("-"):
            return f"Name '{name}' must not start or end with a hyphen."
        if not _DNS_LABEL.match(name):
            return (f"Name '{name}' must be 1-63 characters long, each of which can only be "
                    "alphanumeric or a hyphen.")
    if data.endswith(".") and len(names) > 1 and re.match("^[0-9]+$", names[-1]):
        return f"TLD '{names[-1]}' must not be all numeric."
    return None


def _dns_name(value: Any) -> str | None:
    problem = _dns_format_problem(value)
    return None if problem is None else f"'{value}' not in valid format. Reason: {problem}"


def _dns_domain(value: Any) -> str | None:
    if not value:
        return None
    problem = _dns_name(value)
    if problem is None and not value.endswith("."):
        return f"'{value}' must end with '.'."
    return problem


def _rel_dns_name(value: Any) -> str | None:
    if not value:
        return None
    if not isinstance(value, str):
        raise UnhandledPythonError(
            "AttributeError", f"'{type(value).__name__}' object has no attribute 'endswith'")
    if value.endswith("."):
        return f"'{value}' is a FQDN. It should be a relative domain name."
    if len(value) > _FQDN_MAX - 3:
        return (f"'{value}' contains '{len(value)}' characters. Adding a domain name will cause it "
                f"to exceed the maximum length of a FQDN of '{_FQDN_MAX}'.")
    return _dns_name(value)
