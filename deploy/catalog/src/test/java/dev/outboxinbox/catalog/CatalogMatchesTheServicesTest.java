package dev.outboxinbox.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.catalog.Catalog.Channel;
import dev.outboxinbox.catalog.Catalog.Service;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * What the catalog says of a service is what the service says of itself, in its own
 * application.properties: its port, its database role, its broker user, and the queue, exchange,
 * bindings, dead letters and partitions its inbox declares (which deploy/rabbitmq/definitions.json,
 * made from the catalog, declares too: RabbitMQ refuses the second declaration if they differ).
 */
class CatalogMatchesTheServicesTest {

    private static final Path ROOT = Path.of(System.getProperty("repository.root", "../.."));

    @Test
    void eachServicesOwnConfigurationSaysWhatTheCatalogSays() throws IOException {
        Catalog catalog = Catalog.load(ROOT);
        for (Service service : catalog.services()) {
            Properties properties = new Properties();
            Path file = ROOT.resolve(service.module()).resolve("src/main/resources/application.properties");
            try (Reader reader = Files.newBufferedReader(file)) {
                properties.load(reader);
            }
            Map<String, String> expected = new TreeMap<>(Map.of(
                    "quarkus.http.port", String.valueOf(service.port()),
                    "%prod.quarkus.datasource.username", service.role(),
                    "rabbitmq-username", service.role()));
            boolean channels = !inboxChannels(properties).isEmpty();
            for (Channel channel : service.consumes()) {
                // An @Incoming @Inbox service sets each channel's attributes; a BatchEffects one (no channel) inbox.*.
                String prefix = channels ? "mp.messaging.incoming." + channel.name() + "." : "inbox.";
                if (channels) {
                    expected.put(prefix + "connector", "inbox-rabbitmq");
                }
                expected.put(prefix + "queue", channel.queue());
                expected.put(prefix + "exchange", channel.exchange());
                expected.put(prefix + "routing-keys", String.join(",", channel.events()));
                expected.put(prefix + "dead-letter-queue", channel.deadLetterQueue());
                expected.put(prefix + "dead-letter-exchange", channel.deadLetterExchange());
                expected.put(prefix + "retry-exchange", channel.retryExchange());
                expected.put(prefix + "partitioning.count", String.valueOf(channel.partitions()));
            }
            Map<String, String> actual = new TreeMap<>();
            expected.keySet().forEach(key -> actual.put(key, properties.getProperty(key,
                    key.endsWith("partitioning.count") ? "0" : null)));
            assertThat(actual).as("%s in %s and in %s", service.name(), ROOT.relativize(file), Catalog.FILE).isEqualTo(expected);
        }
    }

    /** The channels bound to the inbox library's connector. */
    private static List<String> inboxChannels(Properties properties) {
        return properties.stringPropertyNames().stream()
                .filter(key -> key.startsWith("mp.messaging.incoming.") && key.endsWith(".connector"))
                .filter(key -> "inbox-rabbitmq".equals(properties.getProperty(key)))
                .map(key -> key.substring("mp.messaging.incoming.".length(), key.length() - ".connector".length()))
                .toList();
    }
}
