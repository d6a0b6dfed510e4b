-- What the API's lists and shows read on a stack of 10^5 to 10^6 resources, each by index
-- (bench/lists.py times them):
-- who requires a resource (required_by of a page, or of one resource shown): only rows that
-- require something are indexed, so a group's members, which require nothing, cost no entry.
-- fastupdate off: a pending list (what fastupdate gathers until vacuum) is read whole by every
-- search, 170 ms after 90,000 rows were written, against 0.2 ms without one;
CREATE INDEX resources_requires_idx ON resources USING gin (requires) WITH (fastupdate = off)
    WHERE requires <> '{}';
-- a resource found by its physical id (show, signal and PATCH as Heat find one; a nested stack's
-- nesting resource);
CREATE INDEX resources_physical_idx ON resources (stack_id, physical_id) WHERE physical_id IS NOT NULL;
-- a stack's nested stacks (nested_depth, the debugger's paused list, resource show's nested link);
CREATE INDEX stacks_parent_idx ON stacks (parent_id) WHERE parent_id IS NOT NULL;
-- a resource's events (GET .../resources/{name}/events), on a stack whose events the purge keeps
-- or not: 0.3 ms against 45 ms for a member's among 200,000.
CREATE INDEX events_resource_idx ON events (stack_id, resource_name, seq);
