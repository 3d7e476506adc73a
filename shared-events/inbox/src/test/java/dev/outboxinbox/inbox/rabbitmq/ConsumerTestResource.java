package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.testing.RealServices;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.HashMap;
import java.util.Map;

/**
 * A fresh database and virtual host for the greeting service of this module's tests, one pair per
 * test class that names them ({@code database}, {@code virtualHost}); with {@code conflictingQueue},
 * a classic queue of that name is made before the service starts, so its quorum declaration is refused.
 */
public class ConsumerTestResource implements QuarkusTestResourceLifecycleManager {

    private String database;
    private String virtualHost;
    private String conflictingQueue;

    @Override
    public void init(Map<String, String> initArgs) {
        database = initArgs.get("database");
        virtualHost = initArgs.get("virtualHost");
        conflictingQueue = initArgs.get("conflictingQueue");
    }

    @Override
    public Map<String, String> start() {
        Map<String, String> config = new HashMap<>(RealServices.freshDatasource(database));
        config.putAll(RealServices.rabbitMq().freshInboxBrokerConfig(virtualHost));
        if (conflictingQueue != null) {
            try (Connection connection = RealServices.rabbitMq().connectionFactory(virtualHost).newConnection();
                 Channel channel = connection.createChannel()) {
                // A hand-made queue of the same name: classic, where the consumer declares a quorum queue.
                channel.queueDeclare(conflictingQueue, true, false, false, Map.of());
            } catch (Exception e) {
                throw new IllegalStateException("cannot make the conflicting queue " + conflictingQueue, e);
            }
        }
        return config;
    }

    @Override
    public void stop() {
        // Left for inspection; recreated by the next run.
    }
}
