-- Hooks a node has reached: Heat's hooks from the environment and Ember's breakpoints.
-- The workflow waits here, not a worker: the row is what remembers the pause.
CREATE TABLE hooks (
    traversal_id   uuid NOT NULL,
    node           text NOT NULL,
    hook           text NOT NULL,
    stack_id       uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    resource_name  text NOT NULL,
    action         text NOT NULL,                 -- the action the hook pauses
    source         text NOT NULL,                 -- environment | breakpoint | step
    reached_at     timestamptz NOT NULL DEFAULT now(),
    deadline       timestamptz,
    on_timeout     text NOT NULL DEFAULT 'fail',  -- fail | continue
    cleared_at     timestamptz,
    cleared_by     text,                          -- signal | breakpoints | step | continue | nats | timeout
    resumed_at     timestamptz,                   -- the node went on past the cleared hook
    nudged_at      timestamptz,                   -- last time a sweep re-queued the node
    PRIMARY KEY (traversal_id, node, hook)
);
CREATE INDEX hooks_waiting_idx ON hooks (stack_id, resource_name) WHERE cleared_at IS NULL;
CREATE INDEX hooks_unresumed_idx ON hooks (cleared_at) WHERE cleared_at IS NOT NULL AND resumed_at IS NULL;

-- Breakpoints set through the api on a stack: by resource name, pattern or nested path.
CREATE TABLE breakpoints (
    id               uuid PRIMARY KEY,
    stack_id         uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    resource         text NOT NULL,
    hooks            text[] NOT NULL,
    resource_type    text,
    timeout_seconds  double precision,
    on_timeout       text NOT NULL DEFAULT 'fail',
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX breakpoints_stack_idx ON breakpoints (stack_id);

-- normal: hooks pause; step: every node that starts pauses too; run: nothing pauses.
ALTER TABLE traversals ADD COLUMN hook_mode text NOT NULL DEFAULT 'normal';
