-- Tokens of the api's own Identity v3 endpoint (EMBER_AUTH=keystone). Only a hash of
-- each token is kept; every api process checks tokens here, so any may issue them.
CREATE TABLE auth_tokens (
    token_hash    text PRIMARY KEY,
    user_id       text NOT NULL,
    user_name     text NOT NULL,
    project_id    text NOT NULL,
    project_name  text NOT NULL,
    roles         text[] NOT NULL,
    audit_id      text NOT NULL,
    issued_at     timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    revoked       boolean NOT NULL DEFAULT false
);
CREATE INDEX auth_tokens_expiry_idx ON auth_tokens (expires_at);
