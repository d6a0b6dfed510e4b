-- Heat's adopt: the abandon data a stack was created from, read by the planner to give
-- each resource the physical id and data it had.
ALTER TABLE stacks ADD COLUMN adopt_data jsonb;
