package dev.outboxinbox.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.catalog.Deployable.Form;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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
        Catalog catalog = Catalog.parse(Files.readString(ROOT.resolve(Catalog.FILE)) + """

                  - name: shipping-service
                    port: 8085
                    database: shipping
                    consumes:
                      - queue: shipping.orders
                        exchange: orders
                        events: [OrderCreated]
                    produces:
                      exchange: shipping
                      events: [InventoryReserved]
                      relay: {name: outbox-relay-shipping, port: 8086, slot: outbox_relay_shipping}
                """);
        Map<String, String> forms = new Forms(catalog).all();

        assertThat(forms.get("deploy/local/services/shipping-service.env")).contains(
                "# module: shipping-service", "# kind: service", "QUARKUS_HTTP_PORT=8085",
                "QUARKUS_DATASOURCE_JDBC_URL=jdbc:postgresql://${POSTGRES_HOST}:${POSTGRES_PORT}/shipping",
                "QUARKUS_DATASOURCE_USERNAME=shipping_service", "QUARKUS_DATASOURCE_PASSWORD=${SHIPPING_DB_PASSWORD}",
                "RABBITMQ_USERNAME=shipping_service", "RABBITMQ_PASSWORD=${SHIPPING_BROKER_PASSWORD}");
        assertThat(forms.get("deploy/local/services/outbox-relay-shipping.env")).contains(
                "# module: outbox-relay", "# kind: relay", "RELAY_SOURCE_DATABASE=shipping", "RELAY_SOURCE_SLOT=outbox_relay_shipping",
                "RELAY_OFFSETS_TABLE=relay_offsets_shipping", "OTEL_SERVICE_NAME=outbox-relay-shipping");
        assertThat(forms.get("docker-compose.yml")).contains("  shipping-service:\n", "      - \"${SHIPPING_SERVICE_HOST_PORT:-8085}:8085\"",
                "  outbox-relay-shipping:\n", "      SHIPPING_DB_PASSWORD: ${SHIPPING_DB_PASSWORD:?SHIPPING_DB_PASSWORD is not set (see .env)}");
        assertThat(forms.get("deploy/kubernetes/shipping-service.yaml")).contains("image: outbox-inbox/shipping-service",
                "containerPort: 8085", "key: SHIPPING_BROKER_PASSWORD");
        assertThat(forms.get("deploy/kubernetes/kustomization.yaml")).contains("  - shipping-service.yaml\n",
                "  - outbox-relay-shipping.yaml\n", "  - name: outbox-inbox/shipping-service\n");
        assertThat(forms.get("deploy/kubernetes/setup-jobs.yaml")).contains("key: SHIPPING_DB_PASSWORD", "key: SHIPPING_BROKER_PASSWORD");
        assertThat(forms.get("deploy/postgres/create-databases.sql")).contains(
                "CREATE ROLE shipping_service LOGIN PASSWORD %L', :'SHIPPING_DB_PASSWORD'",
                "CREATE DATABASE shipping OWNER shipping_service", "GRANT CONNECT ON DATABASE shipping TO shipping_service, outbox_relay;");
        assertThat(forms.get("deploy/rabbitmq/users")).containsPattern(
                "shipping_service +SHIPPING_BROKER_PASSWORD +\\^\\(orders\\|shipping\\\\\\.\\.\\*\\)\\$ +\\^shipping\\\\\\.\\.\\*\\$")
                .containsPattern("outbox_relay .*\\^\\(orders\\|inventory\\|shipping\\|outbox-relay\\\\\\.parked\\)\\$");
        assertThat(forms.get("deploy/rabbitmq/definitions.json")).contains(
                "{\"name\":\"shipping\",\"vhost\":\"/\",\"type\":\"topic\"",
                "{\"name\":\"shipping.orders\",\"vhost\":\"/\",\"durable\":true",
                "{\"source\":\"orders\",\"vhost\":\"/\",\"destination\":\"shipping.orders\",\"destination_type\":\"queue\",\"routing_key\":\"OrderCreated\"",
                "{\"source\":\"shipping.dead-letter\",\"vhost\":\"/\",\"destination\":\"shipping.orders.dead-letter\"",
                "{\"source\":\"shipping.retry\",\"vhost\":\"/\",\"destination\":\"shipping.orders\"");
        assertThat(forms.get("deploy/observability/prometheus.yml")).contains("- targets: [\"shipping-service:8085\"]",
                "- targets: [\"outbox-relay-shipping:8086\"]");
        assertThat(catalog.nextFreePort()).isEqualTo(8087);
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
    void aCatalogNoDeploymentCouldRunIsRefusedWithWhatToDo() {
        assertThat(problems("""
                  - name: Shipping
                    port: 8085
                    database: shipping
                """)).singleElement().asString().contains("service name 'Shipping'", "ending in -service");
        assertThat(problems("""
                  - name: shipping-service
                    port: 8082
                    database: shipping
                """)).singleElement().asString().contains("port 8082 is taken by inventory-service", "e.g. 8085");
        assertThat(problems("""
                  - name: shipping-service
                    port: 5672
                    database: shipping
                """)).singleElement().asString().contains("port 5672 is PostgreSQL's, RabbitMQ's");
        assertThat(problems("""
                  - name: shipping-service
                    port: 8085
                    database: orders
                """)).singleElement().asString().contains("database 'orders' is taken by order-service");
        assertThat(problems("""
                  - name: shipping-service
                    port: 8085
                    database: shipping
                    consumes:
                      - queue: shipping.orders
                        exchange: orders
                        events: [OrderShipped]
                """)).singleElement().asString().contains("unknown event type 'OrderShipped'", "OrderCreated");
        assertThat(problems("""
                  - name: shipping-service
                    port: 8085
                    database: shipping
                    consumes:
                      - queue: orders.shipping
                        exchange: payments
                        events: [OrderCreated]
                """)).hasSize(2).anySatisfy(p -> assertThat(p).contains("start with its prefix, shipping."))
                .anySatisfy(p -> assertThat(p).contains("exchange 'payments', which no service produces"));
        assertThat(problems("""
                  - name: shipping-service
                    port: 8085
                    database: shipping
                    produces:
                      exchange: shipping
                      events: [InventoryReserved]
                      relay: {name: outbox-relay, port: 8086, slot: outbox_relay_shipping}
                """)).singleElement().asString().contains("name 'outbox-relay' is taken by outbox-relay");
        assertThatThrownBy(() -> Catalog.parse(catalogText() + "\n    prot: 8085\n"))
                .as("an unknown key (a misspelt one) is an error, not dropped")
                .hasMessageContaining("prot");
    }

    private static List<String> problems(String entry) {
        try {
            Catalog.parse(catalogText() + "\n" + entry);
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
