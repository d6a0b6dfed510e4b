-- An update with Heat's "converge": its nodes observe each resource before deciding.
ALTER TABLE traversals ADD COLUMN converge boolean NOT NULL DEFAULT false;
