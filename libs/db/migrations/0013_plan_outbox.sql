-- Plan requests written in the transaction that changes a stack's desired state, so a
-- process that dies between commit and publish loses no request: the planner's sweep
-- publishes what is still here after a grace period. A row goes once its publish is acked.
CREATE TABLE plan_outbox (
    msg_id        text PRIMARY KEY,
    stack_id      uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    subject       text NOT NULL,
    payload       bytea NOT NULL,
    traceparent   text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    nudged_at     timestamptz
);
CREATE INDEX plan_outbox_created_idx ON plan_outbox (created_at);
CREATE INDEX plan_outbox_stack_idx ON plan_outbox (stack_id);
