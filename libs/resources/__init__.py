"""Resource plugins: property and attribute schemas, and actions run as short steps.

Pure code: no I/O, no sleeping, no clocks; time and randomness come in
through :class:`~libs.resources.steps.StepContext`. See
:mod:`libs.resources.base` for how the worker drives a plugin.
"""
