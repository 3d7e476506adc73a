package dev.outboxinbox.system;

import java.net.URI;

/**
 * Where the parts of one running system are: the services' HTTP endpoints, the order and
 * inventory databases, the relays' replication slots (orders' outbox, inventory's replies) and the broker. The same harness drives the
 * system tests (processes on fresh databases), deploy/local and docker compose.
 */
public record SystemUnderTest(URI orderService, URI inventoryService, Database orders, Database inventory,
                              String relaySlot, String replyRelaySlot, Broker broker) {
}
