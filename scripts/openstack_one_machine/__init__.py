"""A real OpenStack (Keystone, Glance, Placement, Nova, Neutron, Cinder) from PyPI on one machine."""
