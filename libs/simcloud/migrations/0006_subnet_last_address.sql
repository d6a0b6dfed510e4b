-- The address a subnet handed out last without being asked for one: the next goes after it, so
-- an address given back is not handed out again at once (Neutron picks at random among the free
-- ones, which makes reuse as rare; picking after the highest in use reused a freed top address).
ALTER TABLE simcloud.subnets ADD COLUMN last_ip inet;
