-- The trace context of the operation that wrote a row, so whoever acts on it later (the
-- notifier publishing an event or sending a delivery, a clear re-queuing a paused node,
-- a sweep publishing a plan request) continues that operation's trace: W3C traceparent
-- and, where a caller sent one, tracestate.
ALTER TABLE events ADD COLUMN tracestate text;
ALTER TABLE plan_outbox ADD COLUMN tracestate text;
ALTER TABLE hooks ADD COLUMN traceparent text, ADD COLUMN tracestate text;
ALTER TABLE deliveries ADD COLUMN traceparent text, ADD COLUMN tracestate text;
