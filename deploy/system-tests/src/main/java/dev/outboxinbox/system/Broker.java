package dev.outboxinbox.system;

import com.rabbitmq.client.ConnectionFactory;

/** The broker's virtual host, reached as a user that may read the inventory queues. */
public record Broker(String host, int port, String virtualHost, String user, String password) {

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
