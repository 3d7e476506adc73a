package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Where the broker is: RABBITMQ_HOST, RABBITMQ_PORT, RABBITMQ_USERNAME, RABBITMQ_PASSWORD, RABBITMQ_VIRTUAL_HOST;
 * and RABBITMQ_HEARTBEAT ({@code rabbitmq-heartbeat}, default 5 s): the AMQP heartbeat asked for. A frozen
 * instance (SIGSTOP, a node lost without closing its sockets) keeps its TCP connection open and its
 * deliveries unacked; the broker closes the connection after about two missed heartbeats and gives the
 * messages, and its partitions' single-active-consumer slot, to the instance that took the partitions over.
 * The cost of a shorter one: a consumer that cannot answer for two heartbeats (a long GC pause) is
 * disconnected, and its unacked messages are redelivered (the inbox absorbs the copies).
 */
@ApplicationScoped
public class BrokerSettings {

    private final ConnectionFactory factory = new ConnectionFactory();

    BrokerSettings(@ConfigProperty(name = "rabbitmq-host") String host,
                   @ConfigProperty(name = "rabbitmq-port") int port,
                   @ConfigProperty(name = "rabbitmq-username") String user,
                   @ConfigProperty(name = "rabbitmq-password") String password,
                   @ConfigProperty(name = "rabbitmq-virtual-host", defaultValue = "/") String virtualHost,
                   @ConfigProperty(name = "rabbitmq-heartbeat", defaultValue = "PT5S") Duration heartbeat) {
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setVirtualHost(virtualHost);
        factory.setConnectionTimeout(5_000);
        if (heartbeat.isNegative() || heartbeat.toSeconds() > 65_535 || (!heartbeat.isZero() && heartbeat.toSeconds() == 0)) {
            throw new IllegalArgumentException("rabbitmq-heartbeat must be 0 (off) or 1 to 65535 s, not " + heartbeat);
        }
        factory.setRequestedHeartbeat((int) heartbeat.toSeconds());
        // Recovery is ours (InboxConsumer's supervisor): a new connection, a new channel, the
        // topology declared again, consumption resumed; what was in flight is redelivered.
        factory.setAutomaticRecoveryEnabled(false);
    }

    public ConnectionFactory factory() {
        return factory;
    }

    /** The heartbeat asked for, in seconds (the broker may lower it). */
    public int heartbeatSeconds() {
        return factory.getRequestedHeartbeat();
    }

    public String describe() {
        String vhost = factory.getVirtualHost();
        return factory.getUsername() + "@" + factory.getHost() + ":" + factory.getPort() + (vhost.startsWith("/") ? "" : "/") + vhost;
    }
}
