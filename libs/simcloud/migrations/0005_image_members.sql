-- Glance's image members: a project an image is shared with, and its answer.
CREATE TABLE simcloud.image_members (
    image_id text NOT NULL REFERENCES simcloud.images (id) ON DELETE CASCADE,
    member_id text NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (image_id, member_id)
);
CREATE INDEX image_members_member ON simcloud.image_members (member_id);
