package dev.outboxinbox.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.catalog.Catalog.Channel;
import dev.outboxinbox.catalog.Catalog.Service;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
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
            for (Channel channel : service.consumes()) {
                expected.put("inbox.queue", channel.queue());
                expected.put("inbox.exchange", channel.exchange());
                expected.put("inbox.routing-keys", String.join(",", channel.events()));
                expected.put("inbox.dead-letter-queue", channel.deadLetterQueue());
                expected.put("inbox.dead-letter-exchange", service.deadLetterExchange());
                expected.put("inbox.retry-exchange", service.retryExchange());
                expected.put("inbox.partitioning.count", String.valueOf(channel.partitions()));
            }
            Map<String, String> actual = new TreeMap<>();
            expected.keySet().forEach(key -> actual.put(key, properties.getProperty(key,
                    key.equals("inbox.partitioning.count") ? "0" : null)));
            assertThat(actual).as("%s in %s and in %s", service.name(), ROOT.relativize(file), Catalog.FILE).isEqualTo(expected);
        }
    }
}
