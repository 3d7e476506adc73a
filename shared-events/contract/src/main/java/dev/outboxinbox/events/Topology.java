package dev.outboxinbox.events;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * The RabbitMQ topology, in one place. Who declares what (all declarations are idempotent and
 * the same arguments everywhere, or RabbitMQ refuses them):
 * <ul>
 *   <li>outbox-relay declares the exchange of each aggregate type it publishes to
 *       ({@value #ORDERS_EXCHANGE} for order-service's outbox, {@value #INVENTORY_EXCHANGE} for
 *       inventory-service's: durable topics);</li>
 *   <li>inventory-service declares its queue, the dead-letter exchange and queue, and the binding
 *       (and the orders exchange it binds to, in case it starts before the relay): a consumer owns
 *       the queues it reads. The inbox library does it, from the names in inventory's
 *       {@code inbox.*} settings, which a test keeps equal to this class; order-service does the
 *       same for its queue of inventory's replies;</li>
 *   <li>{@code deploy/rabbitmq/definitions.json} declares all of it for docker compose, so the
 *       relay never publishes into an exchange with no queue bound while inventory starts
 *       (a test keeps that file equal to this class).</li>
 * </ul>
 */
public final class Topology {

    /** Topic exchange for every order event; the routing key is the event type. */
    public static final String ORDERS_EXCHANGE = OrderEvent.AGGREGATE_TYPE;

    /**
     * inventory-service's order events: the consistent-hash exchange (plugin
     * {@code rabbitmq_consistent_hash_exchange}) that spreads them by order id over
     * {@value #INVENTORY_PARTITIONS} partitions, quorum queues {@code inventory.orders.0} … {@code .5}
     * (so they survive a broker node restart with their messages), each read by one instance at a time:
     * the events of one order are applied in the order they were published, however many instances run.
     */
    public static final String INVENTORY_QUEUE = "inventory.orders";
    /** What inventory-service binds its partitions' exchange with: an order's creation and its cancellation. */
    public static final List<String> INVENTORY_BINDINGS = List.of(OrderCreated.TYPE, OrderCancelled.TYPE);
    /** The first of {@link #INVENTORY_BINDINGS}, the binding of OrderCreated (the chaos run publishes its poison with it). */
    public static final String INVENTORY_BINDING = OrderCreated.TYPE;
    /** 6 splits evenly over 1, 2, 3 and 6 instances. Fixed for the life of the queues (it re-hashes the orders). */
    public static final int INVENTORY_PARTITIONS = 6;
    /** What picks an event's partition: its aggregate's id. */
    public static final String INVENTORY_PARTITION_KEY = MessageHeaders.AGGREGATE_ID;

    public static List<String> inventoryPartitions() {
        return IntStream.range(0, INVENTORY_PARTITIONS).mapToObj(p -> INVENTORY_QUEUE + "." + p).toList();
    }

    /** Where inventory-service's messages go when they cannot be processed: a fanout exchange. */
    public static final String INVENTORY_DEAD_LETTER_EXCHANGE = "inventory.dead-letter";
    public static final String INVENTORY_DEAD_LETTER_QUEUE = "inventory.orders.dead-letter";

    /**
     * Where inventory-service sends a dead letter back once its cause is fixed: a fanout exchange
     * bound to the partitions' exchange {@value #INVENTORY_QUEUE} alone, so a redelivery reaches this
     * consumer (in its order's partition) and no other subscriber of the orders exchange.
     */
    public static final String INVENTORY_RETRY_EXCHANGE = "inventory.retry";

    /**
     * Where outbox-relay parks an event the broker returned as unroutable (no queue bound for its
     * routing key), with the reason and the original exchange and routing key in its headers. The
     * relay owns both, declares them on every connection, and republishes from the queue on request.
     */
    public static final String RELAY_PARKING_EXCHANGE = "outbox-relay.parked";
    public static final String RELAY_PARKING_QUEUE = "outbox-relay.parked";

    /** Topic exchange for inventory's replies ({@link InventoryEvent}); the routing key is the event type. */
    public static final String INVENTORY_EXCHANGE = InventoryEvent.AGGREGATE_TYPE;

    /** order-service's queue of inventory's replies: quorum, dead-lettered like inventory's. */
    public static final String ORDER_REPLIES_QUEUE = "order.inventory-replies";
    /** What order-service binds its queue with. */
    public static final List<String> ORDER_REPLIES_BINDINGS = List.of(InventoryReserved.TYPE, InventoryRejected.TYPE,
            InventoryReleased.TYPE);
    public static final String ORDER_DEAD_LETTER_EXCHANGE = "order.dead-letter";
    public static final String ORDER_DEAD_LETTER_QUEUE = "order.inventory-replies.dead-letter";
    /** Through which a dead reply is sent back to {@value #ORDER_REPLIES_QUEUE} alone. */
    public static final String ORDER_RETRY_EXCHANGE = "order.retry";

    /**
     * Deliveries of one message before the broker dead-letters it on its own. The consumer parks
     * a bad message itself, with a reason, on the first delivery; this limit only catches a
     * message that kills the consumer every time it is delivered.
     */
    public static final int DELIVERY_LIMIT = 10;

    private Topology() {
    }

    /**
     * A consumer's queue, as the inbox library declares it: quorum, bounded redeliveries, dead-lettered
     * at least once into the consumer's dead-letter exchange, publishers refused when it is full.
     */
    public static Map<String, Object> consumerQueueArguments(String deadLetterExchange) {
        return Map.of(
                "x-queue-type", "quorum",
                "x-delivery-limit", DELIVERY_LIMIT,
                "x-dead-letter-exchange", deadLetterExchange,
                // At-least-once dead-lettering: a message is only removed once the dead-letter queue confirmed it.
                "x-dead-letter-strategy", "at-least-once",
                "x-overflow", "reject-publish");
    }

    /** One partition of a consumer's queue: its queue's arguments, and one consumer at a time. */
    public static Map<String, Object> consumerPartitionArguments(String deadLetterExchange) {
        Map<String, Object> arguments = new HashMap<>(consumerQueueArguments(deadLetterExchange));
        arguments.put("x-single-active-consumer", true);
        return Map.copyOf(arguments);
    }

    public static Map<String, Object> inventoryQueueArguments() {
        return consumerQueueArguments(INVENTORY_DEAD_LETTER_EXCHANGE);
    }

    /** Each of inventory's partitions: its queue's arguments, and one consumer at a time. */
    public static Map<String, Object> inventoryPartitionArguments() {
        return consumerPartitionArguments(INVENTORY_DEAD_LETTER_EXCHANGE);
    }

    /** The same arguments as inventory's queue, with order-service's dead-letter exchange. */
    public static Map<String, Object> orderRepliesQueueArguments() {
        return consumerQueueArguments(ORDER_DEAD_LETTER_EXCHANGE);
    }

    /** No delivery limit: parked events wait for a person, and a requeue while republishing must not drop them. */
    public static Map<String, Object> relayParkingQueueArguments() {
        return Map.of("x-queue-type", "quorum");
    }

    public static Map<String, Object> deadLetterQueueArguments() {
        return Map.of("x-queue-type", "quorum");
    }
}
