-- Databases and roles of the system, least privilege, idempotent. Run as a superuser with psql:
--   psql -v order_password=… -v relay_password=… -v inventory_password=… -f deploy/postgres/create-databases.sql
--
--   order_service      owns database orders: runs its migrations, creates the outbox publication
--   outbox_relay       REPLICATION; reads orders and inventory only through its slots, SELECT on
--                      their outbox alone (granted by the outbox library's migration in each
--                      service); owns database outbox_relay (offsets, a table per relay instance)
--   inventory_service  owns database inventory (its outbox of replies included)
SELECT format('CREATE ROLE order_service LOGIN PASSWORD %L', :'order_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'order_service') \gexec
SELECT format('CREATE ROLE outbox_relay LOGIN REPLICATION PASSWORD %L', :'relay_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'outbox_relay') \gexec
SELECT format('CREATE ROLE inventory_service LOGIN PASSWORD %L', :'inventory_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'inventory_service') \gexec
-- Passwords follow the configuration on every run (deploy/local/up), so changing .env is enough.
ALTER ROLE order_service PASSWORD :'order_password';
ALTER ROLE outbox_relay PASSWORD :'relay_password';
ALTER ROLE inventory_service PASSWORD :'inventory_password';

SELECT 'CREATE DATABASE orders OWNER order_service'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'orders') \gexec
SELECT 'CREATE DATABASE outbox_relay OWNER outbox_relay'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'outbox_relay') \gexec
SELECT 'CREATE DATABASE inventory OWNER inventory_service'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'inventory') \gexec

-- Only the owner and the relay may connect to orders.
REVOKE CONNECT ON DATABASE orders FROM PUBLIC;
GRANT CONNECT ON DATABASE orders TO order_service, outbox_relay;
REVOKE CONNECT ON DATABASE inventory FROM PUBLIC;
GRANT CONNECT ON DATABASE inventory TO inventory_service, outbox_relay;
REVOKE CONNECT ON DATABASE outbox_relay FROM PUBLIC;
GRANT CONNECT ON DATABASE outbox_relay TO outbox_relay;

