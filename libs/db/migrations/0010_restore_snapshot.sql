-- A restore's snapshot: a resource the restore makes again gets the data the snapshot recorded.
ALTER TABLE traversals ADD COLUMN snapshot_id uuid;
