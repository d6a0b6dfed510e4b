-- Ports by server: "device_id = ANY($1)" cannot use the partial index of 0001 (the planner
-- cannot prove device_id <> '' from it), so a page of servers read every port.
DROP INDEX IF EXISTS simcloud.ports_device;
CREATE INDEX ports_device ON simcloud.ports (device_id);
