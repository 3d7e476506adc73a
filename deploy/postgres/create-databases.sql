-- Databases and roles of the system, least privilege, idempotent. Run as a superuser, the passwords in the
-- environment (.env; psql 15 or newer reads them with \getenv):
--   psql -v ON_ERROR_STOP=1 -f deploy/postgres/create-databases.sql
-- deploy/local/up and compose's postgres-setup run it on every start, so changing .env is enough.
--
--   order_service: owns database orders (runs its migrations, creates its outbox's publication)
--   inventory_service: owns database inventory (runs its migrations, creates its outbox's publication)
--   outbox_relay: REPLICATION; reads the producers' databases only through its slots, SELECT on
--     their outbox alone (granted by the outbox library's migration in each service); owns database
--     outbox_relay (offsets, a table per relay instance)
-- Generated from deploy/catalog.yaml by deploy/catalog/generate: edit the catalog, not this file.

\getenv ORDER_DB_PASSWORD ORDER_DB_PASSWORD
\if :{?ORDER_DB_PASSWORD}
\else
DO $$ BEGIN RAISE EXCEPTION 'ORDER_DB_PASSWORD is not set (see .env)'; END $$;
\endif
\getenv INVENTORY_DB_PASSWORD INVENTORY_DB_PASSWORD
\if :{?INVENTORY_DB_PASSWORD}
\else
DO $$ BEGIN RAISE EXCEPTION 'INVENTORY_DB_PASSWORD is not set (see .env)'; END $$;
\endif
\getenv RELAY_DB_PASSWORD RELAY_DB_PASSWORD
\if :{?RELAY_DB_PASSWORD}
\else
DO $$ BEGIN RAISE EXCEPTION 'RELAY_DB_PASSWORD is not set (see .env)'; END $$;
\endif

SELECT format('CREATE ROLE order_service LOGIN PASSWORD %L', :'ORDER_DB_PASSWORD')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'order_service') \gexec
SELECT format('CREATE ROLE inventory_service LOGIN PASSWORD %L', :'INVENTORY_DB_PASSWORD')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'inventory_service') \gexec
SELECT format('CREATE ROLE outbox_relay LOGIN REPLICATION PASSWORD %L', :'RELAY_DB_PASSWORD')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'outbox_relay') \gexec
-- Passwords follow the environment on every run.
ALTER ROLE order_service PASSWORD :'ORDER_DB_PASSWORD';
ALTER ROLE inventory_service PASSWORD :'INVENTORY_DB_PASSWORD';
ALTER ROLE outbox_relay PASSWORD :'RELAY_DB_PASSWORD';

SELECT 'CREATE DATABASE orders OWNER order_service'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'orders') \gexec
SELECT 'CREATE DATABASE inventory OWNER inventory_service'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'inventory') \gexec
SELECT 'CREATE DATABASE outbox_relay OWNER outbox_relay'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'outbox_relay') \gexec

-- Only the owner, and the relay where it reads an outbox, may connect.
REVOKE CONNECT ON DATABASE orders FROM PUBLIC;
GRANT CONNECT ON DATABASE orders TO order_service, outbox_relay;
REVOKE CONNECT ON DATABASE inventory FROM PUBLIC;
GRANT CONNECT ON DATABASE inventory TO inventory_service, outbox_relay;
REVOKE CONNECT ON DATABASE outbox_relay FROM PUBLIC;
GRANT CONNECT ON DATABASE outbox_relay TO outbox_relay;
