-- Nova: flavors, keypairs, server groups, servers.

CREATE TABLE simcloud.flavors (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    name text NOT NULL UNIQUE,
    ram integer NOT NULL,
    vcpus integer NOT NULL,
    disk integer NOT NULL,
    swap integer NOT NULL DEFAULT 0,
    ephemeral integer NOT NULL DEFAULT 0,
    rxtx_factor double precision NOT NULL DEFAULT 1.0,
    is_public boolean NOT NULL DEFAULT true,
    description text,
    extra_specs jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE simcloud.flavor_access (
    flavor_id text NOT NULL REFERENCES simcloud.flavors (id) ON DELETE CASCADE,
    project_id text NOT NULL,
    PRIMARY KEY (flavor_id, project_id)
);

CREATE TABLE simcloud.keypairs (
    seq bigserial UNIQUE,
    id text NOT NULL UNIQUE,  -- for paging only: Nova names a keypair by (user, name)
    user_id text NOT NULL,
    name text NOT NULL,
    type text NOT NULL DEFAULT 'ssh',
    public_key text NOT NULL,
    fingerprint text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, name)
);

CREATE TABLE simcloud.server_groups (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    user_id text NOT NULL,
    name text NOT NULL,
    policy text NOT NULL,
    rules jsonb NOT NULL DEFAULT '{}',
    members text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A server's status is stored; a transition under way is (task, due_at): when due_at
-- passes, the next read settles it (BUILD -> ACTIVE or ERROR, RESIZE -> VERIFY_RESIZE...).
CREATE TABLE simcloud.servers (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    user_id text NOT NULL,
    name text NOT NULL,
    status text NOT NULL,
    task text,
    due_at timestamptz,
    fails boolean NOT NULL DEFAULT false,
    flavor_id text NOT NULL,
    old_flavor_id text,
    image_id text,
    key_name text,
    metadata jsonb NOT NULL DEFAULT '{}',
    tags text[] NOT NULL DEFAULT '{}',
    fault jsonb,
    launched_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX servers_project ON simcloud.servers (project_id, seq);
CREATE INDEX servers_due ON simcloud.servers (due_at) WHERE task IS NOT NULL;
