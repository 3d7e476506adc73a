-- The outbox is this service's published interface: the relay may read it, and nothing else here.
-- The relay's role is created by the deployment (deploy/postgres/create-databases.sql) before this
-- service starts; where it does not exist (tests of this service alone) there is nothing to grant.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '${relay_role}') THEN
        EXECUTE format('GRANT SELECT ON outbox TO %I', '${relay_role}');
    END IF;
END $$;
