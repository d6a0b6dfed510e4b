"""A simulated OpenStack (``ember simcloud``): Keystone v3, Nova, Glance, Neutron and Cinder over real HTTP.

openstacksdk talks to it unchanged. One aiohttp application, each service a
sub-app under its prefix (``/identity``, ``/compute``, ``/image``,
``/network``, ``/volume``); state in PostgreSQL, schema ``simcloud``, so it
survives a restart.

Frame (shared by every service): ``state`` (SimState, settings, faults),
``migrate`` + ``migrations/`` (the schema), ``errors`` (each service's error
bodies), ``jsonweb`` (JSON in/out), ``listing`` (filters, limit/marker, links),
``auth`` (tokens and their check), ``discovery`` (version documents),
``catalog``, ``netcore`` (ports, fixed IPs and addresses: Neutron's and Nova's),
``chaos`` (the chaos API), ``seeds``, ``app`` (composition), ``server``.
Services: ``keystone``, ``nova/``, ``glance`` (+ ``image_members``), ``neutron/``, ``cinder/``.

A service module gives ``make_app(state)`` (built on ``app.service_app`` with its
error style), and may give ``seed(conn, state)`` (run at every start, idempotent)
and ``CHAOS_ACTS`` (``{"servers/delete": act}``: ``POST /chaos/servers/<id>/delete``).
Its handlers read the caller from ``auth.auth_of(request)`` (the main app checked
the token), the state from ``request.app[STATE]``, and raise ``errors.ApiError``.
A transition that settles lazily and that another service reads registers its
settle in ``state.settlers``.
"""
