package dev.outboxinbox.system;

import com.rabbitmq.client.ConnectionFactory;
import java.net.URI;

/**
 * The broker's virtual host, reached as a user that may read the inventory queues, and its
 * management API ({@code management}, e.g. http://localhost:15672) as the same user, which must
 * have the management or administrator tag: only the API tells unacknowledged messages.
 */
public record Broker(String host, int port, String virtualHost, String user, String password, URI management) {

    public ConnectionFactory connectionFactory() {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(host);
        factory.setPort(port);
        factory.setVirtualHost(virtualHost);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setAutomaticRecoveryEnabled(false);
        factory.setConnectionTimeout(5_000);
        return factory;
    }
}
