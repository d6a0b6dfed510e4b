"""Clouds: cloud calls as data (``calls``), and the edge that makes them through openstacksdk."""
