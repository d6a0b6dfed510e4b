"""HOT's ``make_url``: a correctly quoted URL from its parts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib import parse as urlparse

from libs.template.functions.base import Function, Resolver, resolve

_KEYS = ("scheme", "username", "password", "host", "port", "path", "query", "fragment")


class MakeURL(Function):
    """Build a correctly escaped URL from scheme, credentials, host, port, path, query and fragment."""

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.args, Mapping):
            raise TypeError(f'The arguments to "{self.name}" must be a map')
        invalid = set(self.args) - set(_KEYS)
        if invalid:
            # Heat lists them in set order; sorted is the stable choice among its orders.
            names = ", ".join(sorted(invalid, key=str))
            raise ValueError(f'Invalid arguments to "{self.name}": {names}')
        self._check(self.args)

    def _check(self, args: Any) -> None:
        # ``args`` is a map once validated; resolved without validation it may be anything,
        # and Heat's ``in``/indexing then fail with Python's own errors, as these do.
        for key in _KEYS:
            if key not in args:
                continue
            value = args[key]
            if key == "query":
                if not isinstance(value, (Function, Mapping)):
                    raise TypeError(f'The "{key}" argument to "{self.name}" must be a map')
                # Heat stops checking at the query: a fragment after it is not checked.
                return
            if key == "port":
                if not isinstance(value, Function):
                    self._check_port(value, args)
            elif not isinstance(value, (Function, str)):
                raise TypeError(f'The "{key}" argument to "{self.name}" must be a string')

    def _check_port(self, port: Any, args: Any) -> None:
        number = port
        if not isinstance(number, int):
            try:
                number = int(port)
            except ValueError:
                raise ValueError(f'Invalid URL port "{port}" for {self.name} called with {args}') from None
        if not 0 < number <= 65535:
            raise ValueError(f"Invalid URL port {number:d}, must be in range 1-65535")

    def result(self, resolver: Resolver) -> Any:
        args = resolve(self.args, resolver)
        self._check(args)
        if not isinstance(args, Mapping):
            raise AttributeError(f"'{type(args).__name__}' object has no attribute 'get'")

        scheme = args.get("scheme", "")
        if ":" in scheme:
            raise ValueError("URL \"scheme\" should not contain ':'")

        username = urlparse.quote(args.get("username", ""), safe="")
        password = urlparse.quote(args.get("password", ""), safe="")
        netloc = ""
        if username or password:
            netloc = username + (f":{password}" if password else "") + "@"
        host = args.get("host", "")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        host = urlparse.quote(host, safe=":")
        netloc += f"[{host}]" if ":" in host else host
        port = args.get("port", "")
        if port:
            netloc += f":{port}"

        path = urlparse.quote(args.get("path", ""))
        # Heat keeps "/" readable in the query.
        query = urlparse.urlencode(args.get("query", {})).replace("%2F", "/")
        fragment = urlparse.quote(args.get("fragment", ""))
        return urlparse.urlunsplit((scheme, netloc, path, query, fragment))
