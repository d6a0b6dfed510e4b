-- Stacks, their desired state, resources, traversals and events.

-- A template with its files and merged environment: a desired state. Immutable;
-- a stack points at the one it converges to now and the last one it reached.
CREATE TABLE raw_templates (
    id           uuid PRIMARY KEY,
    template     jsonb NOT NULL,
    files        jsonb NOT NULL DEFAULT '{}',
    environment  jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE stacks (
    id                 uuid PRIMARY KEY,
    name               text NOT NULL,
    project            text NOT NULL,
    action             text NOT NULL,
    status             text NOT NULL,
    status_reason      text NOT NULL DEFAULT '',
    template_id        uuid REFERENCES raw_templates (id),
    prev_template_id   uuid REFERENCES raw_templates (id),   -- rollback target
    current_traversal  uuid,
    disable_rollback   boolean NOT NULL DEFAULT true,
    timeout_mins       integer,
    tags               text[] NOT NULL DEFAULT '{}',
    parent_id          uuid REFERENCES stacks (id),
    nested_depth       integer NOT NULL DEFAULT 0,
    outputs            jsonb,          -- resolved when the stack settles
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz,
    deleted_at         timestamptz
);
CREATE UNIQUE INDEX stacks_live_name_idx ON stacks (project, name) WHERE deleted_at IS NULL;
CREATE INDEX stacks_project_idx ON stacks (project, created_at);

-- One row per physical incarnation of a template resource. A replacement is a
-- second row with the same name; exactly one row of a name is current.
CREATE TABLE resources (
    id               bigserial PRIMARY KEY,
    stack_id         uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    name             text NOT NULL,
    type             text NOT NULL,
    is_current       boolean NOT NULL DEFAULT true,
    physical_id      text,
    action           text NOT NULL DEFAULT 'INIT',
    status           text NOT NULL DEFAULT 'COMPLETE',
    status_reason    text NOT NULL DEFAULT '',
    template_id      uuid,            -- the desired state this row last converged to
    traversal_id     uuid,            -- the traversal whose action is recorded here
    action_started   timestamptz,     -- when that action's first step ran
    properties       jsonb,           -- the properties last applied
    reference        jsonb,           -- get_resource / Ref value
    attributes       jsonb NOT NULL DEFAULT '{}',
    data             jsonb NOT NULL DEFAULT '{}',   -- the plugin's own key/value data
    requires         bigint[] NOT NULL DEFAULT '{}', -- rows it needed at its last action
    replaces         bigint,
    deletion_policy  text NOT NULL DEFAULT 'Delete',  -- from the template it converged to
    version          bigint NOT NULL DEFAULT 0,     -- compare-and-set fence of every write
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz
);
CREATE INDEX resources_stack_idx ON resources (stack_id, name);
CREATE UNIQUE INDEX resources_current_idx ON resources (stack_id, name) WHERE is_current;

CREATE TABLE traversals (
    id           uuid PRIMARY KEY,
    stack_id     uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    action       text NOT NULL,
    template_id  uuid REFERENCES raw_templates (id),
    remaining    integer NOT NULL,     -- nodes not done yet
    deadline     timestamptz,          -- timeout_mins from the start
    failed       boolean NOT NULL DEFAULT false,
    request_id   text NOT NULL,        -- the plan request that made it
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
-- A plan request creates exactly one traversal, however often it is delivered.
CREATE UNIQUE INDEX traversals_request_idx ON traversals (stack_id, request_id);

-- One row per graph node: "<resource id>:u" (converge it) or "<resource id>:c"
-- (clean it up). A node runs when waiting_on reaches 0.
CREATE TABLE traversal_nodes (
    traversal_id  uuid NOT NULL REFERENCES traversals (id) ON DELETE CASCADE,
    node          text NOT NULL,
    waiting_on    integer NOT NULL,
    successors    text[] NOT NULL DEFAULT '{}',
    done          boolean NOT NULL DEFAULT false,
    PRIMARY KEY (traversal_id, node)
);

CREATE TABLE events (
    seq                   bigserial PRIMARY KEY,
    id                    uuid NOT NULL UNIQUE,
    stack_id              uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    resource_name         text NOT NULL,
    physical_resource_id  text NOT NULL DEFAULT '',
    resource_type         text NOT NULL,
    action                text NOT NULL,
    status                text NOT NULL,
    reason                text NOT NULL DEFAULT '',
    properties            jsonb,
    traversal_id          uuid,
    created_at            timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX events_stack_idx ON events (stack_id, seq);
