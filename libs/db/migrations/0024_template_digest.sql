-- The digest of what a desired state was checked from (libs/request_digest.py): a no-change
-- update whose request has the same digest is not checked again. NULL: none (not from the API's
-- maps, or its check asked a cloud).
ALTER TABLE raw_templates ADD COLUMN checked_digest text;
