-- Idempotency-Keys are kept for a retention window (idempotency-keys.retention), then purged in batches.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
