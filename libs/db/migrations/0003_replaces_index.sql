-- Every update node looks for a replacement it started; without this index that
-- lookup scanned the whole resources table (measured by bench/engine.py).
CREATE INDEX resources_replaces_idx ON resources (replaces) WHERE replaces IS NOT NULL;
