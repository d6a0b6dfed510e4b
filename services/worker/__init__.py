"""The worker service: Runs one step of one resource at a time (the work queue)."""
