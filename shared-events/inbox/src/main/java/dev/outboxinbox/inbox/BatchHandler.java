package dev.outboxinbox.inbox;

import java.util.List;

/** What the batcher needs of the inbox transaction: apply a batch, and tell an outage from a bad batch. */
interface BatchHandler {

    /** In one transaction: claim the message ids, apply the new ones, commit. */
    List<Outcome> handle(List<InboxMessage<?>> batch);

    /** Throws if the database does not take this service's writes right now; changes nothing either way. */
    void probe();
}
