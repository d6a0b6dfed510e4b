-- The simulated OpenStack's frame: identity, and the minimal shared tables that
-- more than one service reads (ports, networks, subnets, floating IPs, volumes,
-- volume attachments). A service adds what only it needs in its own migration
-- (ALTER TABLE ... ADD COLUMN, or tables of its own); every row also has a
-- free-form `data` jsonb for the fields no other service reads.
-- Numbering: 0001-0049 frame, Keystone, Nova, Glance; 0050-0099 Neutron and Cinder.

CREATE TABLE simcloud.meta (
    key text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE simcloud.projects (
    id text PRIMARY KEY,
    name text NOT NULL UNIQUE,
    domain_id text NOT NULL DEFAULT 'default'
);

CREATE TABLE simcloud.users (
    id text PRIMARY KEY,
    name text NOT NULL UNIQUE,
    password text NOT NULL,
    default_project_id text REFERENCES simcloud.projects (id),
    domain_id text NOT NULL DEFAULT 'default'
);

CREATE TABLE simcloud.role_assignments (
    user_id text NOT NULL REFERENCES simcloud.users (id),
    project_id text NOT NULL REFERENCES simcloud.projects (id),
    role text NOT NULL,
    PRIMARY KEY (user_id, project_id, role)
);

-- Neutron's objects that Nova reads too. `seq` orders pages (marker = id).
CREATE TABLE simcloud.networks (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    name text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'ACTIVE',
    external boolean NOT NULL DEFAULT false,
    shared boolean NOT NULL DEFAULT false,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE simcloud.subnets (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    network_id text NOT NULL REFERENCES simcloud.networks (id),
    name text NOT NULL DEFAULT '',
    cidr cidr NOT NULL,
    ip_version integer NOT NULL DEFAULT 4,
    gateway_ip inet,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX subnets_network ON simcloud.subnets (network_id);

-- fixed_ips: [{"subnet_id": ..., "ip_address": ...}] as Neutron shows them.
-- device_id is the server's id for a port Nova bound ('' when unbound).
CREATE TABLE simcloud.ports (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    network_id text NOT NULL REFERENCES simcloud.networks (id),
    name text NOT NULL DEFAULT '',
    mac_address text NOT NULL,
    fixed_ips jsonb NOT NULL DEFAULT '[]',
    device_id text NOT NULL DEFAULT '',
    device_owner text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'DOWN',
    admin_state_up boolean NOT NULL DEFAULT true,
    -- true for a port Nova made for a server booted on a network: deleted with the server
    -- (a port given to Nova is only unbound).
    nova_owned boolean NOT NULL DEFAULT false,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX ports_device ON simcloud.ports (device_id) WHERE device_id <> '';
CREATE INDEX ports_network ON simcloud.ports (network_id);

-- One row per address in use on a subnet: the allocation is unique.
CREATE TABLE simcloud.ip_allocations (
    subnet_id text NOT NULL REFERENCES simcloud.subnets (id) ON DELETE CASCADE,
    ip_address inet NOT NULL,
    port_id text,
    PRIMARY KEY (subnet_id, ip_address)
);
CREATE INDEX ip_allocations_port ON simcloud.ip_allocations (port_id);

CREATE TABLE simcloud.floatingips (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    floating_network_id text NOT NULL REFERENCES simcloud.networks (id),
    floating_ip_address inet NOT NULL,
    port_id text,
    fixed_ip_address inet,
    status text NOT NULL DEFAULT 'DOWN',
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX floatingips_port ON simcloud.floatingips (port_id) WHERE port_id IS NOT NULL;

-- Cinder's volumes, as far as Nova needs them (exists, size, status).
CREATE TABLE simcloud.volumes (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    name text NOT NULL DEFAULT '',
    size integer NOT NULL,
    status text NOT NULL DEFAULT 'creating',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);

-- A volume attached to a server (Nova's os-volume_attachments and Cinder's
-- `attachments` both read this). A volume is in-use while it has a row here.
CREATE TABLE simcloud.volume_attachments (
    id text PRIMARY KEY,
    server_id text NOT NULL,
    volume_id text NOT NULL REFERENCES simcloud.volumes (id),
    device text NOT NULL,
    tag text,
    delete_on_termination boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (volume_id)
);
CREATE INDEX volume_attachments_server ON simcloud.volume_attachments (server_id);
