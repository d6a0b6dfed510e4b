-- Stack users (Heat's stack-domain users): one credential per resource that an agent on a server
-- uses (a SOFTWARE_CONFIG server, a signalling deployment). Only a hash of each secret is kept. A
-- credential lives as long as its resource row: a resource deleted (with its stack, too) takes its
-- credential, and the tokens issued for it, with it.
CREATE TABLE stack_users (
    id             text PRIMARY KEY,
    project_id     text NOT NULL,
    stack_id       uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    resource_id    bigint NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    resource_name  text NOT NULL,
    secret_hash    text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stack_users_resource_idx ON stack_users (stack_id, resource_name);
CREATE INDEX stack_users_row_idx ON stack_users (resource_id);

-- A token issued to a stack user is bound to it: gone with the credential.
ALTER TABLE auth_tokens ADD COLUMN stack_user_id text REFERENCES stack_users (id) ON DELETE CASCADE;
CREATE INDEX auth_tokens_stack_user_idx ON auth_tokens (stack_user_id) WHERE stack_user_id IS NOT NULL;
