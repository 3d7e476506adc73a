package dev.outboxinbox.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.catalog.Deployable.Form;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every deployment form is what deploy/catalog.yaml makes, byte for byte: a form edited by hand, or a
 * catalog changed without deploy/catalog/generate, fails here and names the file. Then the catalog's
 * own rules, and a service added to it: the forms gain it with no other edit.
 */
class CatalogFormsTest {

    private static final Path ROOT = Path.of(System.getProperty("repository.root", "../.."));

    @Test
    void everyFormIsWhatTheCatalogMakes() throws IOException {
        Catalog catalog = Catalog.load(ROOT);
        Map<String, String> forms = new Forms(catalog).all();
        System.out.printf("[catalog] %d services, %d deployables, %d files made from %s%n", catalog.services().size(),
                catalog.deployables().size(), forms.size(), Catalog.FILE);
        assertThat(Generate.differing(ROOT, catalog))
                .as("files that differ from what %s makes: run deploy/catalog/generate and commit what it writes", Catalog.FILE)
                .isEmpty();
    }

    @Test
    void aServiceAddedToTheCatalogAppearsInEveryForm() throws IOException {
        // A name and ports the catalog does not use yet (this test also runs in a checkout with services added).
        String stem = freshStem();
        String upper = stem.toUpperCase();
        int port = Catalog.load(ROOT).nextFreePort();
        int relayPort = port + 1;
        String text = Files.readString(ROOT.resolve(Catalog.FILE)) + """

                  - name: %1$s-service
                    port: %2$d
                    database: %1$s
                    consumes:
                      - queue: %1$s.orders
                        exchange: orders
                        events: [OrderCreated]
                      - queue: %1$s.replies
                        channel: inventory-replies
                        exchange: inventory
                        events: [InventoryReserved]
                    produces:
                      exchange: %1$s
                      events: [InventoryReserved]
                      relay: {name: outbox-relay-%1$s, port: %3$d, slot: outbox_relay_%1$s}
                """.formatted(stem, port, relayPort);
        Catalog catalog = Catalog.parse(text, ROOT, Set.of());
        Map<String, String> forms = new Forms(catalog).all();

        assertThat(forms.get("deploy/local/services/%s-service.env".formatted(stem))).contains(
                "# module: %s-service".formatted(stem), "# kind: service", "QUARKUS_HTTP_PORT=" + port,
                "QUARKUS_DATASOURCE_JDBC_URL=jdbc:postgresql://${POSTGRES_HOST}:${POSTGRES_PORT}/" + stem,
                "QUARKUS_DATASOURCE_USERNAME=%s_service".formatted(stem), "QUARKUS_DATASOURCE_PASSWORD=${%s_DB_PASSWORD}".formatted(upper),
                "RABBITMQ_USERNAME=%s_service".formatted(stem), "RABBITMQ_PASSWORD=${%s_BROKER_PASSWORD}".formatted(upper));
        assertThat(forms.get("deploy/local/services/outbox-relay-%s.env".formatted(stem))).contains(
                "# module: outbox-relay", "# kind: relay", "RELAY_SOURCE_DATABASE=" + stem, "RELAY_SOURCE_SLOT=outbox_relay_" + stem,
                "RELAY_OFFSETS_TABLE=relay_offsets_" + stem, "OTEL_SERVICE_NAME=outbox-relay-" + stem);
        assertThat(forms.get("docker-compose.yml")).contains("  %s-service:\n".formatted(stem),
                "      - \"${%s_SERVICE_HOST_PORT:-%d}:%d\"".formatted(upper, port, port),
                "  outbox-relay-%s:\n".formatted(stem),
                "      %1$s_DB_PASSWORD: ${%1$s_DB_PASSWORD:?%1$s_DB_PASSWORD is not set (see .env)}".formatted(upper));
        assertThat(forms.get("deploy/kubernetes/%s-service.yaml".formatted(stem))).contains("image: outbox-inbox/%s-service".formatted(stem),
                "containerPort: " + port, "key: %s_BROKER_PASSWORD".formatted(upper));
        assertThat(forms.get("deploy/kubernetes/kustomization.yaml")).contains("  - %s-service.yaml\n".formatted(stem),
                "  - outbox-relay-%s.yaml\n".formatted(stem), "  - name: outbox-inbox/%s-service\n".formatted(stem));
        assertThat(forms.get("deploy/kubernetes/setup-jobs.yaml")).contains("key: %s_DB_PASSWORD".formatted(upper),
                "key: %s_BROKER_PASSWORD".formatted(upper));
        assertThat(forms.get("deploy/postgres/create-databases.sql")).contains(
                "CREATE ROLE %s_service LOGIN PASSWORD %%L', :'%s_DB_PASSWORD'".formatted(stem, upper),
                "CREATE DATABASE %1$s OWNER %1$s_service".formatted(stem),
                "GRANT CONNECT ON DATABASE %1$s TO %1$s_service, outbox_relay;".formatted(stem));
        assertThat(forms.get("deploy/rabbitmq/users")).containsPattern(
                "%1$s_service +%2$s_BROKER_PASSWORD +\\^\\(orders\\|inventory\\|.*%1$s\\\\\\.\\.\\*\\)\\$ +\\^%1$s\\\\\\.\\.\\*\\$"
                        .formatted(stem, upper))
                .containsPattern("outbox_relay .*\\^\\(orders\\|inventory\\|.*%s\\|outbox-relay\\\\\\.parked\\)\\$".formatted(stem));
        assertThat(forms.get("deploy/rabbitmq/definitions.json")).contains(
                "{\"name\":\"%s\",\"vhost\":\"/\",\"type\":\"topic\"".formatted(stem),
                "{\"name\":\"%s.orders\",\"vhost\":\"/\",\"durable\":true".formatted(stem),
                "{\"source\":\"orders\",\"vhost\":\"/\",\"destination\":\"%s.orders\",\"destination_type\":\"queue\",\"routing_key\":\"OrderCreated\"".formatted(stem),
                "{\"source\":\"%1$s.orders.dead-letter\",\"vhost\":\"/\",\"destination\":\"%1$s.orders.dead-letter\"".formatted(stem),
                "{\"source\":\"%1$s.orders.retry\",\"vhost\":\"/\",\"destination\":\"%1$s.orders\"".formatted(stem),
                // Each channel its own dead-letter and retry exchanges (a shared fanout would mix the two's dead letters).
                "\"x-dead-letter-exchange\":\"%1$s.replies.dead-letter\"".formatted(stem),
                "{\"source\":\"%1$s.replies.dead-letter\",\"vhost\":\"/\",\"destination\":\"%1$s.replies.dead-letter\"".formatted(stem),
                "{\"source\":\"%1$s.replies.retry\",\"vhost\":\"/\",\"destination\":\"%1$s.replies\"".formatted(stem),
                "{\"source\":\"inventory\",\"vhost\":\"/\",\"destination\":\"%s.replies\",\"destination_type\":\"queue\",\"routing_key\":\"InventoryReserved\"".formatted(stem));
        assertThat(forms.get("deploy/observability/prometheus.yml")).contains("- targets: [\"%s-service:%d\"]".formatted(stem, port),
                "- targets: [\"outbox-relay-%s:%d\"]".formatted(stem, relayPort));
        assertThat(catalog.nextFreePort()).isEqualTo(relayPort + 1);

        Forms spliced = new Forms(catalog, ROOT);
        assertThat(spliced.rootPom(Files.readString(ROOT.resolve("pom.xml"))))
                .contains("<module>%s-service</module>".formatted(stem)).contains(Forms.MODULES_FROM, Forms.MODULES_TO);
        assertThat(spliced.environment(Files.readString(ROOT.resolve(".env"))))
                .contains(Forms.PASSWORDS_ADDED, "%s_DB_PASSWORD=%s-db-demo-secret".formatted(upper, stem));
    }

    /** A stem no service of the catalog has: parcel, or parcel2, parcel3 … */
    private static String freshStem() throws IOException {
        Catalog catalog = Catalog.load(ROOT);
        for (int n = 1; ; n++) {
            String stem = n == 1 ? "parcel" : "parcel" + n;
            if (catalog.services().stream().noneMatch(s -> s.name().equals(stem + "-service") || s.owns().equals(stem))) {
                return stem;
            }
        }
    }

    @Test
    void eachFormReachesAServiceItsOwnWay() throws IOException {
        Catalog catalog = Catalog.load(ROOT);
        String url = "{url:inventory-service}";
        assertThat(Form.LOCAL.fill(url, catalog)).isEqualTo("http://127.0.0.1:8082");
        assertThat(Form.COMPOSE.fill(url, catalog)).isEqualTo("http://inventory-service:8082");
        assertThat(Form.KUBERNETES.fill("jdbc:postgresql://{postgres-host}:{postgres-port}/x " + url, catalog))
                .isEqualTo("jdbc:postgresql://postgres-rw:5432/x http://inventory-service:8082");
    }

    @Test
    void aScalarIsQuotedWhereYamlWouldReadItAsSomethingElse() {
        assertThat(Forms.yaml("jdbc:postgresql://postgres:5432/orders")).isEqualTo("jdbc:postgresql://postgres:5432/orders");
        assertThat(Forms.yaml("${X:?X is not set (see .env)}")).isEqualTo("${X:?X is not set (see .env)}");
        assertThat(Forms.yaml("/")).isEqualTo("/");
        assertThat(Forms.yaml("8081")).isEqualTo("\"8081\"");
        assertThat(Forms.yaml("true")).isEqualTo("\"true\"");
        assertThat(Forms.yaml("a: b")).isEqualTo("\"a: b\"");
        assertThat(Forms.yaml("a #b")).isEqualTo("\"a #b\"");
        assertThat(Forms.yaml("*star")).isEqualTo("\"*star\"");
        assertThat(Forms.yaml("")).isEqualTo("\"\"");
    }

    @Test
    void aCatalogNoDeploymentCouldRunIsRefusedWithWhatToDo() throws IOException {
        int free = Catalog.load(ROOT).nextFreePort();
        assertThat(problems("""
                  - name: Refused
                    port: FREE
                    database: refused
                """)).singleElement().asString().contains("service name 'Refused'", "ending in -service");
        assertThat(problems("""
                  - name: refused-service
                    port: 8082
                    database: refused
                """)).singleElement().asString().contains("port 8082 is taken by inventory-service", "e.g. " + free);
        assertThat(problems("""
                  - name: refused-service
                    port: 5672
                    database: refused
                """)).singleElement().asString().contains("port 5672 is PostgreSQL's, RabbitMQ's");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: orders
                """)).singleElement().asString().contains("database 'orders' is taken by order-service");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    consumes:
                      - queue: refused.orders
                        exchange: orders
                        events: [OrderShipped]
                """)).singleElement().asString().contains("unknown event type 'OrderShipped'", "OrderCreated");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    consumes:
                      - queue: orders.refused
                        exchange: payments
                        events: [OrderCreated]
                """)).hasSize(2).anySatisfy(p -> assertThat(p).contains("start with its prefix, refused."))
                .anySatisfy(p -> assertThat(p).contains("exchange 'payments', which no service produces"));
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    produces:
                      exchange: refused
                      events: [InventoryReserved]
                      relay: {name: outbox-relay, port: FREE2, slot: outbox_relay_refused}
                """)).singleElement().asString().contains("name 'outbox-relay' is taken by outbox-relay");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    produces:
                      exchange: refused
                      events: [RefusalSent]
                      relay: {name: outbox-relay-refused, port: FREE2, slot: outbox_relay_refused}
                """)).as("a type of its own needs its schema in its module").singleElement().asString()
                .contains("unknown event type 'RefusalSent'");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    consumes:
                      - queue: refused.orders
                        exchange: orders
                        events: [InventoryReserved]
                """)).as("a type its exchange does not carry").singleElement().asString()
                .contains("takes InventoryReserved from 'orders', where it is not published");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: postgres
                    db-password: ORDER_DB_PASSWORD
                """)).hasSize(2).anySatisfy(p -> assertThat(p).contains("database 'postgres' is PostgreSQL's own"))
                .anySatisfy(p -> assertThat(p).contains("password variable 'ORDER_DB_PASSWORD' is taken by order-service"));
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    consumes:
                      - queue: refused.orders
                        exchange: orders
                        events: [OrderCreated]
                      - queue: refused.replies
                        channel: orders
                        exchange: inventory
                        events: [InventoryReserved]
                """)).singleElement().asString().contains("two queues are read on the channel 'orders'");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    consumes:
                      - queue: refused.orders
                        exchange: orders
                        events: [OrderCreated]
                        dead-letter-exchange: refused.dead-letter
                      - queue: refused.replies
                        exchange: inventory
                        events: [InventoryReserved]
                        dead-letter-exchange: refused.dead-letter
                """)).as("one fanout for two channels' dead letters").singleElement().asString()
                .contains("'refused.dead-letter' is declared by two of its channels");
        assertThat(problems("""
                  - name: refused-service
                    port: FREE
                    database: refused
                    environment:
                      GREETING: "$(rm -rf ~)"
                """)).singleElement().asString().contains("GREETING=", "deploy/local sources it");
        assertThatThrownBy(() -> Catalog.parse(catalogText() + "\n    prot: 8085\n", ROOT, Set.of()))
                .as("an unknown key (a misspelt one) is an error, not dropped")
                .hasMessageContaining("prot");
    }

    /** The problems of the catalog with this entry added; FREE and FREE2 stand for ports no service has. */
    private static List<String> problems(String entry) {
        try {
            int free = Catalog.load(ROOT).nextFreePort();
            Catalog.parse(catalogText() + "\n" + entry.replace("FREE2", String.valueOf(free + 1)).replace("FREE", String.valueOf(free)),
                    ROOT, Set.of());
            return List.of();
        } catch (Catalog.InvalidCatalogException e) {
            return e.problems();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static String catalogText() {
        try {
            return Files.readString(ROOT.resolve(Catalog.FILE));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
