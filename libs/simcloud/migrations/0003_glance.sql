-- Glance: images. Extra properties (Glance's free keys) live in `properties`.

CREATE TABLE simcloud.images (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    owner text,
    name text,
    status text NOT NULL DEFAULT 'queued',
    visibility text NOT NULL DEFAULT 'shared',
    protected boolean NOT NULL DEFAULT false,
    os_hidden boolean NOT NULL DEFAULT false,
    disk_format text,
    container_format text,
    size bigint,
    virtual_size bigint,
    checksum text,
    os_hash_algo text,
    os_hash_value text,
    min_disk integer NOT NULL DEFAULT 0,
    min_ram integer NOT NULL DEFAULT 0,
    tags text[] NOT NULL DEFAULT '{}',
    properties jsonb NOT NULL DEFAULT '{}',
    -- an import under way: status 'importing' until due_at, then 'active'
    due_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX images_name ON simcloud.images (name);
