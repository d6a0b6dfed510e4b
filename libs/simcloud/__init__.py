"""A simulated OpenStack: Keystone, Nova, Glance, Neutron and Cinder over real HTTP, state in PostgreSQL."""
