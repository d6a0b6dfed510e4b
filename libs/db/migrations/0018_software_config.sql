-- Issue 17: Heat's software configs and deployments, the rows its software_configs and
-- software_deployments routes serve and its deployment resources write.

-- A config: immutable once stored (an update of a config resource stores a new one).
-- ``config`` holds Heat's {config, inputs, outputs, options}. A deployment's derived config
-- (its inputs' values filled in, one per action it runs) is a config too, with ``hash`` the
-- SHA-256 of all of its derived data: an agent runs each hash once.
CREATE TABLE software_configs (
    id          uuid PRIMARY KEY,
    project     text NOT NULL,
    name        text NOT NULL DEFAULT '',
    "group"     text NOT NULL DEFAULT 'Heat::Ungrouped',
    config      jsonb NOT NULL,
    hash        text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX software_configs_project_idx ON software_configs (project, created_at, id);

-- A deployment of a config to a server: what the server's agent runs and signals back.
-- A deployment resource's physical id is its row's id (as Heat: `stack failures list` reads it).
CREATE TABLE software_deployments (
    id                     uuid PRIMARY KEY,
    project                text NOT NULL,
    config_id              uuid NOT NULL REFERENCES software_configs (id),
    server_id              text NOT NULL,
    input_values           jsonb NOT NULL DEFAULT '{}',
    output_values          jsonb NOT NULL DEFAULT '{}',
    action                 text NOT NULL DEFAULT 'INIT',
    status                 text NOT NULL DEFAULT 'COMPLETE',
    status_reason          text NOT NULL DEFAULT '',
    stack_user_project_id  text NOT NULL DEFAULT '',
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz
);
CREATE INDEX software_deployments_server_idx ON software_deployments (server_id, created_at);
CREATE INDEX software_deployments_project_idx ON software_deployments (project, created_at, id);
CREATE INDEX software_deployments_config_idx ON software_deployments (config_id);

CREATE TRIGGER software_deployments_bound_reason BEFORE INSERT OR UPDATE OF status_reason
    ON software_deployments FOR EACH ROW WHEN (octet_length(NEW.status_reason) > 65535)
    EXECUTE FUNCTION ember_bound_status_reason();
