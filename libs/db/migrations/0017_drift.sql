-- Issue 16: the observer lists the cloud and records drift, once per change.

-- A drift record: what the cloud showed of a resource that differs from what Ember recorded.
-- Open while resolved_at is NULL (at most one open record per resource row); closed when the
-- cloud agrees again or the resource is acted on.
CREATE TABLE drift (
    id            bigserial PRIMARY KEY,
    stack_id      uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    resource_id   bigint REFERENCES resources (id) ON DELETE SET NULL,
    resource_name text NOT NULL,
    kind          text NOT NULL,              -- gone, error, changed
    fields        text[] NOT NULL DEFAULT '{}',
    detail        text NOT NULL DEFAULT '',
    action_taken  text NOT NULL DEFAULT 'reported',
    detected_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at   timestamptz
);
CREATE INDEX drift_stack_idx ON drift (stack_id, detected_at);
CREATE UNIQUE INDEX drift_open_idx ON drift (resource_id) WHERE resolved_at IS NULL;

-- Which observer lists which cloud project: a lease, taken over once its holder stops renewing it.
CREATE TABLE observer_leases (
    cloud          text NOT NULL,
    cloud_project  text NOT NULL,             -- '' for the cloud entry's own project
    holder         uuid NOT NULL,
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (cloud, cloud_project)
);
