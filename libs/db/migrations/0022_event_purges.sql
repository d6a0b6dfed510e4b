-- How far each stack's events were purged (EMBER_MAX_EVENTS_PER_STACK): the newest seq a purge
-- deleted. A client of the event stream resuming after an event no longer there learns from it
-- that the event was purged (resume from the oldest kept) rather than never written (404). Its
-- own table, not a column of stacks: the notifier writes it while workers update stack rows.
CREATE TABLE event_purges (
    stack_id     uuid PRIMARY KEY REFERENCES stacks (id) ON DELETE CASCADE,
    through_seq  bigint NOT NULL
);
