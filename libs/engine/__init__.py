"""The convergence engine's decisions, as pure functions: plans, steps, statuses.

Nothing here does I/O: the planner and worker services load rows, call these,
and write what they return.
"""
