package dev.outboxinbox.system;

import java.net.URI;

/**
 * Where the parts of one running system are: the services' HTTP endpoints, the order and
 * inventory databases, the relay's replication slot and the broker. The same harness drives the
 * system tests (processes on fresh databases), deploy/local and docker compose.
 */
public record SystemUnderTest(URI orderService, URI inventoryService, Database orders, Database inventory,
                              String relaySlot, Broker broker) {
}
