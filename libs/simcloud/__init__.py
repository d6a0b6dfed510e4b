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
Services: ``keystone``, ``nova/``, ``glance``, ``neutron/``, ``cinder/``.
"""
