-- A provider template's nested stack sees its parent resource's metadata and policies
-- (resource_facade); they belong to its desired state, so they are stored with it.
ALTER TABLE raw_templates ADD COLUMN facade jsonb;
