"""The ``OS::Neutron::*`` resource types: pure plugins that ask for openstacksdk network calls as data."""
