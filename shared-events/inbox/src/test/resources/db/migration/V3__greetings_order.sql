-- The order greetings took effect in (a sequence is drawn at each insert): the channel's group commit
-- must keep the order they arrived in, a failed message among them or not.
ALTER TABLE greetings ADD COLUMN applied_order bigserial;
