"""One ``ember dev`` (every service, real processes) shared by the fuzzing tests of this package.

The fuzzers send thousands of requests: each request is timed and its answer checked as it is made
(:class:`Caller`), so a failure names the request that was slow or answered 5xx.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import RUN_ID, admin
from tests.database_supply import drop_streams
from tests.integration.clients import ember_dev
from tests.support import Servers, database_url_for

# The bound: no request, whatever it carries, takes longer than this.
SLOWEST_ANSWER = 2.0
PROJECT = "fuzz"


def budget(name: str, default: int) -> int:
    """How many examples a fuzzer runs: small by default (CI's bounded run), more by hand."""
    return int(os.environ.get(name, default))


@dataclasses.dataclass
class Caller:
    """Sends requests to the api and fails on a 5xx, a non-Heat fault body or a slow answer."""

    base: str
    session: requests.Session = dataclasses.field(default_factory=requests.Session)
    slowest: float = 0.0
    sent: int = 0

    def check(self, method: str, path: str, response: requests.Response, elapsed: float) -> None:
        self.sent += 1
        self.slowest = max(self.slowest, elapsed)
        streaming = response.headers.get("Content-Type", "").startswith("text/event-stream")
        # An event stream's body never ends: its head is the answer.
        body = "(an event stream)" if streaming else response.text[:500]
        what = f"{method} {path} -> {response.status_code} in {elapsed:.2f}s: {body}"
        assert response.status_code < 500, what
        assert elapsed < SLOWEST_ANSWER, what
        if method != "HEAD" and response.status_code >= 400 and response.headers.get(
                "Content-Type", "").startswith("application/json"):
            body = response.json()
            assert {"code", "error", "explanation", "title"} <= set(body), what
            assert body["code"] == response.status_code, what

    def request(self, method: str, path: str, *, json: Any = None, data: bytes | None = None,
                headers: Mapping[str, str] | None = None) -> requests.Response:
        started = time.monotonic()
        response = self.session.request(method, self.base + path, json=json, data=data,
                                        headers=dict(headers or {}), timeout=30)
        self.check(method, path, response, time.monotonic() - started)
        return response


@pytest.fixture(scope="package")
def fuzz_api(servers: Servers, template_database: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Caller]:
    name = f"ember_fuzz_{RUN_ID}_{uuid.uuid4().hex[:6]}"
    asyncio.run(admin(servers.admin_db_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"'))
    prefix = f"f{RUN_ID}_{uuid.uuid4().hex[:6]}"
    env = {"EMBER_DATABASE_URL": database_url_for(servers.admin_db_url, name),
           "EMBER_NATS_URL": servers.nats_url, "EMBER_NATS_PREFIX": prefix,
           "EMBER_SHUTDOWN_GRACE": "5"}
    log_dir: Path = tmp_path_factory.mktemp("fuzz")
    try:
        with ember_dev(env, log_dir) as url:
            caller = Caller(url)
            yield caller
            print(f"\nfuzz: {caller.sent} requests, slowest answer {caller.slowest:.3f}s")
    finally:
        asyncio.run(admin(servers.admin_db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        asyncio.run(drop_streams(servers.nats_url, prefix))
