package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.testing.InboxThroughput;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Packaged inventory-service instances side by side on one database and virtual host, and what each reads. */
final class InventoryInstances {

    private static final Pattern PARTITIONS = Pattern.compile("\"partitions\"\\s*:\\s*\"\\[([0-9, ]*)\\] of");
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private InventoryInstances() {
    }

    /** Starts one, named {@code name} among the others (INBOX_PARTITIONING_INSTANCE), logging to target/{@code name}.log. */
    static ServiceProcess start(PostgresEndpoint pg, String database, String virtualHost, String name) throws Exception {
        Map<String, String> environment = new HashMap<>(InboxThroughput.environment(pg, database, virtualHost));
        environment.put("INBOX_PARTITIONING_INSTANCE", name);
        return ServiceProcess.start(Path.of("target", "quarkus-app"), environment, new File("target", name + ".log"));
    }

    /**
     * Waits until both started instances are ready, writes the products ({@code INSERT ...}), and waits
     * until each reads three of the six partitions: the state every test of two instances starts from.
     */
    static void shareThePartitions(PostgresEndpoint pg, String database, ServiceProcess a, ServiceProcess b, String products)
            throws Exception {
        a.awaitReady(Duration.ofSeconds(90));
        b.awaitReady(Duration.ofSeconds(90));
        pg.execute(database, products);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(partitionsOf(a)).hasSize(3);
            assertThat(partitionsOf(b)).hasSize(3);
        });
    }

    /** The partitions an instance reads, from its readiness. */
    static List<Integer> partitionsOf(ServiceProcess instance) throws Exception {
        String body = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + instance.port() + "/q/health/ready"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
        Matcher partitions = PARTITIONS.matcher(body);
        if (!partitions.find()) {
            throw new AssertionError("no partitions in " + body);
        }
        List<Integer> read = new ArrayList<>();
        for (String partition : partitions.group(1).split(",\\s*")) {
            if (!partition.isBlank()) {
                read.add(Integer.parseInt(partition.trim()));
            }
        }
        return read;
    }
}
