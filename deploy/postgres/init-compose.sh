#!/usr/bin/env bash
# Compose: runs once, when the postgres container initialises its data directory.
# The same databases and roles as deploy/local/up creates, with passwords from .env.
set -euo pipefail
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres \
    -v order_password="$ORDER_DB_PASSWORD" -v relay_password="$RELAY_DB_PASSWORD" \
    -v inventory_password="$INVENTORY_DB_PASSWORD" -f /deploy/postgres/create-databases.sql
