package dev.outboxinbox.inventory.messaging;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.outboxinbox.events.Topology;
import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Declares the queues this service owns, with exactly the arguments of {@link Topology} (and of
 * deploy/rabbitmq/definitions.json), before the messaging channels start. The connector's own
 * declaration is off: it cannot express at-least-once dead-lettering. Declarations are idempotent.
 */
@ApplicationScoped
class TopologyDeclarer {

    private static final int ATTEMPTS = 30;

    private final ConnectionFactory factory = new ConnectionFactory();

    TopologyDeclarer(@ConfigProperty(name = "rabbitmq-host") String host,
                     @ConfigProperty(name = "rabbitmq-port") int port,
                     @ConfigProperty(name = "rabbitmq-username") String user,
                     @ConfigProperty(name = "rabbitmq-password") String password,
                     @ConfigProperty(name = "rabbitmq-virtual-host", defaultValue = "/") String virtualHost) {
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setVirtualHost(virtualHost);
        factory.setAutomaticRecoveryEnabled(false);
    }

    void declare(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) StartupEvent event) throws InterruptedException {
        for (int attempt = 1; ; attempt++) {
            try (Connection connection = factory.newConnection("inventory-service-topology");
                 Channel channel = connection.createChannel()) {
                channel.exchangeDeclare(Topology.ORDERS_EXCHANGE, BuiltinExchangeType.TOPIC, true);
                channel.exchangeDeclare(Topology.INVENTORY_DEAD_LETTER_EXCHANGE, BuiltinExchangeType.FANOUT, true);
                channel.queueDeclare(Topology.INVENTORY_DEAD_LETTER_QUEUE, true, false, false, Topology.deadLetterQueueArguments());
                channel.queueBind(Topology.INVENTORY_DEAD_LETTER_QUEUE, Topology.INVENTORY_DEAD_LETTER_EXCHANGE, "");
                channel.queueDeclare(Topology.INVENTORY_QUEUE, true, false, false, Topology.inventoryQueueArguments());
                channel.queueBind(Topology.INVENTORY_QUEUE, Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING);
                Log.infof("Declared %s bound to %s/%s, dead letters to %s", Topology.INVENTORY_QUEUE,
                        Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING, Topology.INVENTORY_DEAD_LETTER_QUEUE);
                return;
            } catch (Exception e) {
                if (attempt >= ATTEMPTS) {
                    throw new IllegalStateException("Could not declare the RabbitMQ topology after " + attempt + " attempts", e);
                }
                Log.warnf("RabbitMQ topology not declared yet (attempt %d of %d): %s", attempt, ATTEMPTS, e.toString());
                Thread.sleep(Math.min(1000L * attempt, 5000L));
            }
        }
    }
}
