"""Stack users' credentials (libs/resources/stack_user) and how a server's section shows them (pure)."""

from __future__ import annotations

import random

from libs.resources import stack_user
from libs.resources.collect_config import HIDDEN, hidden, os_collect_config, user_of
from libs.resources.stack_user import StackUser


def test_a_new_user_is_random_and_only_its_hash_is_granted() -> None:
    rng = random.SystemRandom()
    first, second = stack_user.new(rng), stack_user.new(rng)
    assert first.id != second.id and first.secret != second.secret
    assert len(first.secret) >= 40 and first.secret.isalnum()
    granted = first.grant()
    assert granted.id == first.id and first.secret not in granted.secret_hash
    assert stack_user.matches(first.secret, granted.secret_hash)
    assert not stack_user.matches(second.secret, granted.secret_hash)


def test_a_user_is_kept_in_data_and_read_back() -> None:
    user = StackUser(id="u1", secret="s3cr3t")
    assert stack_user.of(stack_user.kept(user)) == user
    assert stack_user.of(None) is None and stack_user.of({"id": "u1"}) is None


def test_a_signed_url_carries_the_secret_in_its_query() -> None:
    user = StackUser(id="u1", secret="s3cr3t")
    assert stack_user.signed("http://api/v1/p/stacks/s/1/resources/r/signal", user) == (
        "http://api/v1/p/stacks/s/1/resources/r/signal?ember_signature=s3cr3t")
    assert stack_user.signed("http://api/x?a=1", user) == "http://api/x?a=1&ember_signature=s3cr3t"


def test_resource_show_leaves_the_servers_password_out() -> None:
    user = StackUser(id="u1", secret="s3cr3t")
    collect = os_collect_config(api_url="http://api", project="p", stack_name="st", stack_id="1",
                                resource_name="server", user=user)
    assert user_of(collect) == user
    shown = hidden(collect)
    assert shown["heat"]["password"] == HIDDEN and shown["heat"]["user_id"] == "u1"
    assert collect["heat"]["password"] == "s3cr3t"  # the metadata, and get_attr, still have it
    assert hidden({}) == {} and hidden(None) is None
