-- Every running Ember process reports here; Heat's GET /services reads it.
CREATE TABLE services (
    id               uuid PRIMARY KEY,
    service          text NOT NULL,            -- api, planner, worker, observer, notifier (Heat: "binary")
    host             text NOT NULL,
    hostname         text NOT NULL,
    pid              integer NOT NULL,
    topic            text NOT NULL,
    report_interval  double precision NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    deleted_at       timestamptz
);

CREATE INDEX services_service_idx ON services (service) WHERE deleted_at IS NULL;
