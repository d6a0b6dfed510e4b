-- Cinder's own objects (the frame holds volumes and volume_attachments, which Nova reads too).

CREATE TABLE simcloud.volume_types (
    id text PRIMARY KEY,
    name text NOT NULL UNIQUE,
    description text,
    is_public boolean NOT NULL DEFAULT true,
    extra_specs jsonb NOT NULL DEFAULT '{}'
);
INSERT INTO simcloud.volume_types (id, name, description)
VALUES ('c0ffee00-0000-4000-8000-0000000000de', '__DEFAULT__', 'Default Volume Type');

CREATE TABLE simcloud.volume_snapshots (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    project_id text NOT NULL,
    volume_id text NOT NULL REFERENCES simcloud.volumes (id),
    name text NOT NULL DEFAULT '',
    size integer NOT NULL,
    status text NOT NULL DEFAULT 'creating',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX volume_snapshots_volume ON simcloud.volume_snapshots (volume_id);

CREATE TABLE simcloud.volume_quotas (
    project_id text NOT NULL,
    resource text NOT NULL,
    quota integer NOT NULL,
    PRIMARY KEY (project_id, resource)
);

-- The volumes and snapshots in a transition (creating, deleting...), settled by the clock.
CREATE INDEX volumes_in_transition ON simcloud.volumes ((data->>'ready_at')) WHERE data ? 'next_status';
CREATE INDEX volume_snapshots_in_transition ON simcloud.volume_snapshots ((data->>'ready_at'))
    WHERE data ? 'next_status';
CREATE INDEX volumes_project ON simcloud.volumes (project_id);
