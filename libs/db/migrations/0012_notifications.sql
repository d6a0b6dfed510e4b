-- Notices: every event goes out on NATS once (the notifier publishes what is not yet
-- published), carrying the trace context of the operation that wrote it.
ALTER TABLE events ADD COLUMN traceparent text;
ALTER TABLE events ADD COLUMN published boolean NOT NULL DEFAULT false;
CREATE INDEX events_unpublished_idx ON events (seq) WHERE NOT published;

-- Webhook subscriptions: per project (stack_id NULL) or per stack and the stacks nested in it.
-- source: api, or environment (a stack's event_sinks of type webhook).
CREATE TABLE subscriptions (
    id          uuid PRIMARY KEY,
    project     text NOT NULL,
    stack_id    uuid REFERENCES stacks (id) ON DELETE CASCADE,
    url         text NOT NULL,
    secret      text NOT NULL,
    kinds       text[] NOT NULL,          -- event, hook
    resource    text NOT NULL DEFAULT '*',
    hooks       text[],                   -- NULL: every hook
    source      text NOT NULL DEFAULT 'api',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_project_idx ON subscriptions (project);

-- One row per notice and subscription: the unique key is what keeps a notice from
-- being sent twice after a notifier restart.
CREATE TABLE deliveries (
    id               uuid PRIMARY KEY,
    subscription_id  uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    notice_key       text NOT NULL,
    kind             text NOT NULL,
    body             jsonb NOT NULL,
    status           text NOT NULL DEFAULT 'pending',   -- pending, delivered, failed
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    last_status      integer,
    next_at          timestamptz NOT NULL DEFAULT now(),
    leased_until     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (subscription_id, notice_key)
);
CREATE INDEX deliveries_due_idx ON deliveries (next_at) WHERE status = 'pending';
CREATE INDEX deliveries_subscription_idx ON deliveries (subscription_id, created_at);
