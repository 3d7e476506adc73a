package dev.outboxinbox.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * deploy/new-service, on a copy of the catalog: what it writes for a consumer that produces, and what it
 * refuses, with what to do, before writing anything. (CI's check-new-service builds, tests and runs
 * what it writes, in a clone.)
 */
class NewServiceTest {

    private static final Path ROOT = Path.of(System.getProperty("repository.root", "../.."));

    @TempDir
    Path scratch;

    /** The catalog, and the schemas of the types its services declare themselves (a service deploy/new-service made). */
    private Path checkout() throws IOException {
        Files.createDirectories(scratch.resolve("deploy"));
        Files.copy(ROOT.resolve(Catalog.FILE), scratch.resolve(Catalog.FILE));
        for (Catalog.Service service : Catalog.load(ROOT).services()) {
            Path schemas = Path.of(service.module(), "src/main/resources/schemas");
            if (Files.isDirectory(ROOT.resolve(schemas))) {
                Files.createDirectories(scratch.resolve(schemas));
                try (Stream<Path> files = Files.list(ROOT.resolve(schemas))) {
                    for (Path file : files.toList()) {
                        Files.copy(file, scratch.resolve(schemas).resolve(file.getFileName()));
                    }
                }
            }
        }
        return scratch;
    }

    @Test
    void itWritesTheModuleAndTheCatalogsEntry() throws Exception {
        Path root = checkout();
        int port = Catalog.load(root).nextFreePort();
        List<String> written = NewService.create(root, NewService.parse(new String[] {
                "parcel-service", "--consumes", "orders:OrderCreated,orders:OrderCancelled", "--produces", "ParcelSent"}));

        assertThat(written).contains("parcel-service/pom.xml", "parcel-service/src/main/resources/application.properties",
                "parcel-service/src/main/resources/db/migration/V1__received_events.sql",
                "parcel-service/src/main/java/dev/outboxinbox/parcel/ParcelEventDecoder.java",
                "parcel-service/src/main/java/dev/outboxinbox/parcel/ParcelHandler.java",
                "parcel-service/src/main/java/dev/outboxinbox/parcel/events/ParcelSent.java",
                "parcel-service/src/main/resources/schemas/ParcelSent.v1.json",
                "parcel-service/src/test/java/dev/outboxinbox/parcel/ParcelServiceTest.java");
        for (String file : written) {
            assertThat(Files.readString(root.resolve(file))).as(file).doesNotContain("{{");
        }
        Catalog catalog = Catalog.load(root);
        Catalog.Service parcel = catalog.services().get(catalog.services().size() - 1);
        assertThat(parcel.name()).isEqualTo("parcel-service");
        assertThat(parcel.port()).isEqualTo(port);
        assertThat(parcel.consumes()).singleElement().satisfies(channel -> {
            assertThat(channel.queue()).isEqualTo("parcel.orders");
            assertThat(channel.events()).containsExactly("OrderCreated", "OrderCancelled");
        });
        assertThat(parcel.produces().relay().name()).isEqualTo("outbox-relay-parcel");
        assertThat(parcel.produces().relay().port()).isEqualTo(port + 1);
        String properties = Files.readString(root.resolve("parcel-service/src/main/resources/application.properties"));
        assertThat(properties).contains("quarkus.http.port=" + port, "mp.messaging.incoming.orders.connector=inbox-rabbitmq",
                "mp.messaging.incoming.orders.queue=parcel.orders",
                "mp.messaging.incoming.orders.routing-keys=OrderCreated,OrderCancelled", "outbox.publication=");
        assertThat(Files.readString(root.resolve("parcel-service/src/main/java/dev/outboxinbox/parcel/ParcelHandler.java")))
                .contains("@Incoming(\"orders\")", "@Inbox", "outbox.send(new ParcelSent(");
    }

    @Test
    void aConsumerThatProducesNothingHasNoOutbox() throws Exception {
        Path root = checkout();
        List<String> written = NewService.create(root, NewService.parse(new String[] {"audit-service", "--consumes", "inventory:InventoryRejected"}));
        assertThat(written).noneMatch(f -> f.contains("/events/"));
        assertThat(Files.readString(root.resolve("audit-service/pom.xml"))).doesNotContain("<artifactId>outbox</artifactId>");
        assertThat(Files.readString(root.resolve("audit-service/src/main/java/dev/outboxinbox/audit/AuditHandler.java")))
                .doesNotContain("OutboxEmitter", "outbox.send");
        assertThat(Catalog.load(root).services()).last().satisfies(s -> assertThat(s.produces()).isNull());
    }

    @Test
    void whatCouldNotRunIsRefusedWithWhatToDoAndNothingIsWritten() throws Exception {
        assertThatThrownBy(() -> NewService.parse(new String[] {"Parcel", "--consumes", "orders:OrderCreated"}))
                .hasMessageContaining("ending in -service");
        assertThatThrownBy(() -> NewService.parse(new String[] {"parcel-service"})).hasMessageContaining("--consumes");
        assertThatThrownBy(() -> NewService.parse(new String[] {"parcel-service", "--consumes", "OrderCreated"}))
                .hasMessageContaining("EXCHANGE:Type, e.g. orders:OrderCreated");
        assertThatThrownBy(() -> NewService.parse(new String[] {"parcel-service", "--consumes", "orders:OrderCreated,inventory:InventoryReserved"}))
                .hasMessageContaining("this command writes one channel, for one exchange");
        assertThatThrownBy(() -> NewService.parse(new String[] {"parcel-service", "--consumes", "orders:OrderCreated", "--produces", "InventoryReserved"}))
                .hasMessageContaining("the contract's already");
        assertThatThrownBy(() -> NewService.parse(new String[] {"new-service", "--consumes", "orders:OrderCreated"}))
                .hasMessageContaining("'new' is a Java keyword");
        assertThatThrownBy(() -> NewService.parse(new String[] {"parcel-service", "--consumes", "orders:OrderCreated", "--produces", "Event"}))
                .hasMessageContaining("which the module's code uses").hasMessageContaining("ParcelRequested");

        Path root = checkout();
        String before = Files.readString(root.resolve(Catalog.FILE));
        assertThatThrownBy(() -> NewService.create(root, NewService.parse(new String[] {"parcel-service", "--consumes", "orders:OrderShipped"})))
                .hasMessageContaining("unknown event type 'OrderShipped'");
        assertThatThrownBy(() -> NewService.create(root, NewService.parse(new String[] {"parcel-service", "--consumes", "orders:OrderCreated",
                "--port", "8081"}))).hasMessageContaining("port 8081 is taken by order-service");
        assertThatThrownBy(() -> NewService.create(root, NewService.parse(new String[] {"parcel-service", "--consumes", "payments:OrderCreated"})))
                .hasMessageContaining("which no service produces");
        assertThat(Files.readString(root.resolve(Catalog.FILE))).as("the catalog, untouched").isEqualTo(before);
        assertThat(root.resolve("parcel-service")).as("no module written").doesNotExist();

        Files.createDirectories(root.resolve("parcel-service"));
        assertThatThrownBy(() -> NewService.create(root, NewService.parse(new String[] {"parcel-service", "--consumes", "orders:OrderCreated"})))
                .hasMessageContaining("parcel-service/ exists already");
    }
}
