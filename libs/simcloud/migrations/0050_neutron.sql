-- Neutron's own objects (the frame holds networks, subnets, ports, ip_allocations and
-- floatingips, which Nova reads too). Same shape: the columns lists filter on, the
-- rest of Neutron's fields in `data`.

CREATE TABLE simcloud.routers (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    name text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'ACTIVE',
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE simcloud.security_groups (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    name text NOT NULL DEFAULT '',
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
-- One `default` group per project, made on the project's first Neutron call.
CREATE UNIQUE INDEX security_groups_default ON simcloud.security_groups (project_id) WHERE name = 'default';

CREATE TABLE simcloud.security_group_rules (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    security_group_id text NOT NULL REFERENCES simcloud.security_groups (id) ON DELETE CASCADE,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX security_group_rules_group ON simcloud.security_group_rules (security_group_id);

-- Per-project limits that differ from Neutron's defaults (PUT /v2.0/quotas/{project}).
CREATE TABLE simcloud.network_quotas (
    project_id text NOT NULL,
    resource text NOT NULL,
    quota integer NOT NULL,
    PRIMARY KEY (project_id, resource)
);
