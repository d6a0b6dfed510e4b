-- A stack's published events, newest first, without reading its unpublished ones: the notifier
-- asks after every batch it publishes whether the stack holds more than max_events_per_stack, and
-- along events_stack_idx that read passed over every event of the stack not yet published (a
-- group of 10^6 members had 10^6 of them waiting: 0.4 s a batch, the notifier's whole core).
CREATE INDEX events_published_idx ON events (stack_id, seq) WHERE published;
