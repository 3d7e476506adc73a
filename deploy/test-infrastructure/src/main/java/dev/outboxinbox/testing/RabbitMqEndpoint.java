package dev.outboxinbox.testing;

import com.rabbitmq.client.ConnectionFactory;
import java.net.URI;
import java.util.Map;

/**
 * A RabbitMQ broker the tests may declare on, reached as a user with the administrator tag,
 * the means to stop and start it ({@link BrokerControl}), and its management API (for what AMQP
 * does not tell, such as a queue's unacknowledged messages).
 */
public record RabbitMqEndpoint(String host, int port, String user, String password, BrokerControl control, URI management) {

    public ConnectionFactory connectionFactory(String virtualHost) {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setVirtualHost(virtualHost);
        factory.setAutomaticRecoveryEnabled(false);
        return factory;
    }

    /**
     * The settings a consumer built on the inbox library reads ({@code rabbitmq-host}, …), pointing
     * at this broker and the given virtual host (recreated first, so nothing of an earlier run is left).
     */
    public Map<String, String> freshInboxBrokerConfig(String virtualHost) {
        recreateVirtualHost(virtualHost);
        return Map.of("rabbitmq-host", host, "rabbitmq-port", String.valueOf(port), "rabbitmq-username", user,
                "rabbitmq-password", password, "rabbitmq-virtual-host", virtualHost);
    }

    /** Deletes and recreates a virtual host, so that queues and messages of earlier runs are gone. */
    public void recreateVirtualHost(String name) {
        control.rabbitmqctl("delete_vhost", name);
        control.rabbitmqctlOrFail("add_vhost", name);
        control.rabbitmqctlOrFail("set_permissions", "-p", name, user, ".*", ".*", ".*");
    }
}
