-- Issue 14: one event of 11.7 MB (a failure reason embedding a huge value) went over NATS's
-- 1 MB payload limit and stopped notifications for every project.
--
-- Every stored reason is bounded, whoever writes it, as Heat bounds them: an event's reason
-- keeps its first 255 characters (Heat's Event model), a stack's, resource's or snapshot's
-- status reason its first 65,535 bytes of UTF-8 (Heat's limit for them), cut on a character.
-- The triggers run only for a reason over the bound (WHEN), so ordinary writes pay nothing.
CREATE FUNCTION ember_bounded(reason text, max_bytes integer) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    cut text := left(reason, max_bytes);
BEGIN
    -- A character takes 1 to 4 bytes: drop at least a quarter of the excess each round.
    WHILE octet_length(cut) > max_bytes LOOP
        cut := left(cut, char_length(cut) - greatest((octet_length(cut) - max_bytes) / 4, 1));
    END LOOP;
    RETURN cut;
END $$;

CREATE FUNCTION ember_bound_event_reason() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.reason := left(NEW.reason, 255);
    RETURN NEW;
END $$;

CREATE FUNCTION ember_bound_status_reason() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.status_reason := ember_bounded(NEW.status_reason, 65535);
    RETURN NEW;
END $$;

CREATE TRIGGER events_bounded_reason BEFORE INSERT OR UPDATE OF reason ON events
    FOR EACH ROW WHEN (char_length(NEW.reason) > 255) EXECUTE FUNCTION ember_bound_event_reason();
CREATE TRIGGER stacks_bounded_reason BEFORE INSERT OR UPDATE OF status_reason ON stacks
    FOR EACH ROW WHEN (octet_length(NEW.status_reason) > 65535) EXECUTE FUNCTION ember_bound_status_reason();
CREATE TRIGGER resources_bounded_reason BEFORE INSERT OR UPDATE OF status_reason ON resources
    FOR EACH ROW WHEN (octet_length(NEW.status_reason) > 65535) EXECUTE FUNCTION ember_bound_status_reason();
CREATE TRIGGER snapshots_bounded_reason BEFORE INSERT OR UPDATE OF status_reason ON snapshots
    FOR EACH ROW WHEN (octet_length(NEW.status_reason) > 65535) EXECUTE FUNCTION ember_bound_status_reason();

UPDATE events SET reason = left(reason, 255) WHERE char_length(reason) > 255;
UPDATE stacks SET status_reason = ember_bounded(status_reason, 65535) WHERE octet_length(status_reason) > 65535;
UPDATE resources SET status_reason = ember_bounded(status_reason, 65535)
    WHERE octet_length(status_reason) > 65535;

-- Messages set aside because they can never be delivered or handled (too large for NATS,
-- unreadable, or failing the same way on every try), so they hold up nothing behind them.
-- source: what set it aside (events-outbox, plan-outbox, or a consumer's durable name).
CREATE TABLE dead_letters (
    id           bigserial PRIMARY KEY,
    source       text NOT NULL,
    subject      text NOT NULL,
    msg_id       text,
    stack_id     uuid,
    reason       text NOT NULL,
    size         integer NOT NULL,
    -- The message itself, when it is small enough to keep (to read or replay).
    payload      bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    replayed_at  timestamptz
);
CREATE INDEX dead_letters_created_idx ON dead_letters (created_at);
