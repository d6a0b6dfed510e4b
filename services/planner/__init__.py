"""The planner service: Turns a stack's desired state into a traversal (the plan requests queue)."""
