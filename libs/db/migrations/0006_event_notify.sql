-- The api streams a stack's events as they are written (GET .../events/stream). One
-- notification per statement and stack: a batch of a thousand events costs one, and
-- Postgres delivers it at commit, so a listener never reads an uncommitted event.
CREATE FUNCTION ember_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sid uuid;
BEGIN
    FOR sid IN SELECT DISTINCT stack_id FROM inserted LOOP
        PERFORM pg_notify('ember_events', sid::text);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify AFTER INSERT ON events REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ember_events_notify();
