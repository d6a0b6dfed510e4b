-- Stack snapshots: the desired state and every resource's recorded data at one moment,
-- for Heat's snapshot routes and for restoring the stack to them.
CREATE TABLE snapshots (
    id             uuid PRIMARY KEY,
    stack_id       uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    name           text,
    template_id    uuid REFERENCES raw_templates (id),
    data           jsonb NOT NULL,
    status         text NOT NULL,
    status_reason  text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX snapshots_stack_idx ON snapshots (stack_id, created_at);
