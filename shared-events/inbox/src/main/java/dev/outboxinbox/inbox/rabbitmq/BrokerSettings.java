package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Where the broker is: RABBITMQ_HOST, RABBITMQ_PORT, RABBITMQ_USERNAME, RABBITMQ_PASSWORD, RABBITMQ_VIRTUAL_HOST. */
@ApplicationScoped
public class BrokerSettings {

    private final ConnectionFactory factory = new ConnectionFactory();

    BrokerSettings(@ConfigProperty(name = "rabbitmq-host") String host,
                   @ConfigProperty(name = "rabbitmq-port") int port,
                   @ConfigProperty(name = "rabbitmq-username") String user,
                   @ConfigProperty(name = "rabbitmq-password") String password,
                   @ConfigProperty(name = "rabbitmq-virtual-host", defaultValue = "/") String virtualHost) {
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setVirtualHost(virtualHost);
        factory.setConnectionTimeout(5_000);
        factory.setRequestedHeartbeat(10);
        // Recovery is ours (InboxConsumer's supervisor): a new connection, a new channel, the
        // topology declared again, consumption resumed; what was in flight is redelivered.
        factory.setAutomaticRecoveryEnabled(false);
    }

    public ConnectionFactory factory() {
        return factory;
    }

    public String describe() {
        return factory.getUsername() + "@" + factory.getHost() + ":" + factory.getPort() + factory.getVirtualHost();
    }
}
