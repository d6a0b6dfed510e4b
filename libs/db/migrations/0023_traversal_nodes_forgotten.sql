-- A traversal's nodes are its sync points and nothing else: once it has finished (every node
-- done) they are deleted (services/planner/node_sweep.py), so that a stack of 10^6 resources
-- does not add 10^6 rows on every create, update and delete. The traversal row stays (its
-- request id makes a plan request's redelivery find it); this says its nodes are gone.
ALTER TABLE traversals ADD COLUMN nodes_forgotten boolean NOT NULL DEFAULT false;
CREATE INDEX traversals_unswept_idx ON traversals (finished_at)
    WHERE finished_at IS NOT NULL AND NOT nodes_forgotten;
