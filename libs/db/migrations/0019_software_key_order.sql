-- A config's body and a deployment's values are shown as they were sent, keys in the sender's
-- order (Heat keeps the text; `openstack software deployment output show --all` prints the
-- outputs in the order the agent sent them): json, not jsonb, as the templates since 0014.
ALTER TABLE software_configs ALTER COLUMN config TYPE json USING config::json;
ALTER TABLE software_deployments ALTER COLUMN input_values DROP DEFAULT;
ALTER TABLE software_deployments ALTER COLUMN output_values DROP DEFAULT;
ALTER TABLE software_deployments
    ALTER COLUMN input_values TYPE json USING input_values::json,
    ALTER COLUMN output_values TYPE json USING output_values::json;
ALTER TABLE software_deployments ALTER COLUMN input_values SET DEFAULT '{}';
ALTER TABLE software_deployments ALTER COLUMN output_values SET DEFAULT '{}';
