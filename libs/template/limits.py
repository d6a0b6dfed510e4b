"""The limits Heat enforces on templates and stacks, configurable, with Heat's messages.

Heat's defaults suit Heat's engine. Ember keeps them as defaults for
compatibility (a template Heat refuses, Ember refuses the same way), and the
operator raises them: ``max_resources_per_stack = -1`` disables the count, as
Heat's own tuning guides recommend for large stacks.
"""

from __future__ import annotations

import dataclasses

from libs.template.errors import RequestLimitExceeded


@dataclasses.dataclass(frozen=True)
class Limits:
    max_template_size: int = 524_288
    max_json_body_size: int = 1_048_576
    max_resources_per_stack: int = 1000
    max_nested_stack_depth: int = 5

    def nested(self) -> Limits:
        """The limits of a nested stack: no per-request limit (the top stack's request had them;
        a group's generated template grows with its size), the same depth."""
        return dataclasses.replace(self, max_resources_per_stack=-1, max_template_size=2**31)

    def check_resource_count(self, count: int) -> None:
        """Resources in one stack, or in a whole nested tree (``count`` is the caller's sum)."""
        if self.max_resources_per_stack != -1 and count > self.max_resources_per_stack:
            raise RequestLimitExceeded("Maximum resources per stack exceeded.")

    def check_nested_depth(self, parent_depth: int) -> int:
        """The depth of a child of a stack at ``parent_depth`` (the top stack is 0)."""
        if parent_depth >= self.max_nested_stack_depth:
            raise RequestLimitExceeded(f"Recursion depth exceeds {self.max_nested_stack_depth}.")
        return parent_depth + 1
