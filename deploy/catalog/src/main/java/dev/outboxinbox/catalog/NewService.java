package dev.outboxinbox.catalog;

import dev.outboxinbox.events.EventSchema;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * deploy/new-service NAME --consumes EXCHANGE:Type,… [--produces Type,…] [--port N]: a new service,
 * built and tested like the others, and its entry in deploy/catalog.yaml, from which every deployment
 * form is then made ({@link Generate}). Everything is checked before anything is written: a bad name,
 * a module or port already there, an event type the contract does not know, a catalog no deployment
 * could run, each refused with what to do instead.
 */
public final class NewService {

    /** A new event type's name: an upper-case letter, then letters and digits (ShipmentRequested). */
    private static final Pattern TYPE = Pattern.compile("[A-Z][A-Za-z0-9]{2,63}");
    private static final Pattern CONSUMED = Pattern.compile("([a-z][a-z0-9.-]*):([A-Z][A-Za-z0-9]*)");
    /** Java's keywords and literals: a package named after the service (dev.outboxinbox.&lt;stem&gt;) cannot be one. */
    private static final Set<String> JAVA_KEYWORDS = Set.of("abstract", "assert", "boolean", "break", "byte", "case", "catch",
            "char", "class", "const", "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally",
            "float", "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long", "native", "new",
            "package", "private", "protected", "public", "return", "short", "static", "strictfp", "super", "switch",
            "synchronized", "this", "throw", "throws", "transient", "try", "void", "volatile", "while", "true", "false",
            "null", "var", "record", "yield", "sealed", "permits");
    /** The names the module's own classes and imports take. */
    private static final Set<String> TAKEN_TYPES = Set.of("Event", "ReceivedEvent", "Instant", "UUID", "Inbox", "InboxMetadata",
            "OutboxEmitter", "EventIds");

    /** What was asked for, checked. */
    record Request(String name, Map<String, List<String>> consumes, List<String> produces, Integer port) {

        String stem() {
            return name.substring(0, name.length() - "-service".length());
        }

        /** shipping → Shipping, gift-card → GiftCard. */
        String camel() {
            StringBuilder out = new StringBuilder();
            for (String part : stem().split("-")) {
                out.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
            }
            return out.toString();
        }

        String javaPackage() {
            return "dev.outboxinbox." + stem().replace("-", "");
        }

        String database() {
            return stem().replace('-', '_');
        }

        String exchange() {
            return consumes.keySet().iterator().next();
        }

        String queue() {
            return stem() + "." + exchange();
        }
    }

    /** A refusal: what is wrong and what to do; nothing was written. */
    static final class Refused extends Exception {
        Refused(String message) {
            super(message);
        }
    }

    private NewService() {
    }

    public static void main(String[] args) throws IOException {
        // deploy/new-service passes the checkout's root last.
        Path root = Path.of(args.length > 0 ? args[args.length - 1] : ".");
        args = java.util.Arrays.copyOf(args, Math.max(0, args.length - 1));
        try {
            Request request = parse(args);
            List<String> written = create(root, request);
            System.out.printf("[new-service] %s: %d files of its own, %d lines, and its entry in %s%n", request.name(),
                    written.size(), lines(root, written), Catalog.FILE);
            Generate.main(new String[] {root.toString()});
            System.out.printf("""
                    [new-service] next:
                      ./mvnw -B -ntp -q install -DskipTests && ./mvnw -B -ntp verify -pl %1$s
                          build everything, then run its tests (against the real RabbitMQ and PostgreSQL: README, "Run the tests")
                      deploy/local/up
                          start it with the others; deploy/local/status shows it
                      %1$s/src/main/java/%3$s/%2$sHandler.java
                          replace the placeholder effect with the service's own (ADD-A-SERVICE.md: what is left to you)
                    """, request.name(), request.camel(), request.javaPackage().replace('.', '/'));
        } catch (Refused e) {
            System.err.println("[new-service] " + e.getMessage());
            System.exit(2);
        }
    }

    static Request parse(String[] args) throws Refused {
        String name = null;
        Map<String, List<String>> consumes = new LinkedHashMap<>();
        List<String> produces = new ArrayList<>();
        Integer port = null;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--consumes" -> {
                    for (String item : value(args, ++i, arg).split(",")) {
                        var consumed = CONSUMED.matcher(item.strip());
                        if (!consumed.matches()) {
                            throw new Refused("--consumes " + item + ": EXCHANGE:Type, e.g. orders:OrderCreated");
                        }
                        consumes.computeIfAbsent(consumed.group(1), e -> new ArrayList<>()).add(consumed.group(2));
                    }
                }
                case "--produces" -> {
                    for (String item : value(args, ++i, arg).split(",")) {
                        produces.add(item.strip());
                    }
                }
                case "--port" -> {
                    try {
                        port = Integer.valueOf(value(args, ++i, arg));
                    } catch (NumberFormatException e) {
                        throw new Refused("--port " + args[i] + ": a number");
                    }
                }
                default -> {
                    if (arg.startsWith("-")) {
                        throw new Refused("unknown option " + arg + " (--consumes, --produces, --port)");
                    }
                    if (name != null) {
                        throw new Refused("one name, not '" + name + "' and '" + arg + "'");
                    }
                    name = arg;
                }
            }
        }
        if (name == null) {
            throw new Refused("usage: deploy/new-service NAME --consumes EXCHANGE:Type,… [--produces Type,…] [--port N]");
        }
        if (!Catalog.SERVICE_NAME.matcher(name).matches()) {
            throw new Refused("'" + name + "' is not a service name: lower-case letters, digits and dashes, starting with a letter"
                    + " and ending in -service (it is a host name in compose and Kubernetes), e.g. shipping-service");
        }
        String stem = name.substring(0, name.length() - "-service".length());
        if (JAVA_KEYWORDS.contains(stem.replace("-", "")) || Character.isDigit(stem.replace("-", "").charAt(0))) {
            throw new Refused("'" + name + "' would make the Java package dev.outboxinbox." + stem.replace("-", "")
                    + ", and '" + stem.replace("-", "") + "' is a Java keyword: choose another name");
        }
        if (consumes.isEmpty()) {
            throw new Refused("--consumes: what it takes, EXCHANGE:Type (e.g. orders:OrderCreated). A service that only"
                    + " produces needs its own trigger (an HTTP resource, a schedule), which this command does not write");
        }
        if (consumes.size() > 1) {
            throw new Refused("--consumes names exchanges " + consumes.keySet() + ": this command writes one channel, for"
                    + " one exchange; add the others by hand, a channel each (shared-events/ADD-A-SERVICE.md, \"A second stream\")");
        }
        for (String type : produces) {
            if (!TYPE.matcher(type).matches() || TAKEN_TYPES.contains(type)) {
                throw new Refused("--produces " + type + ": an event type's name of its own (not " + TAKEN_TYPES
                        + ", which the module's code uses), e.g. " + new Request(name, Map.of(), List.of(), null).camel() + "Requested");
            }
            if (!EventSchema.versions(type).isEmpty()) {
                throw new Refused("--produces " + type + ": the contract's already, and its producer's; a service sends events"
                        + " of its own: name a new type (e.g. " + new Request(name, Map.of(), List.of(), null).camel() + "Requested)");
            }
        }
        if (new LinkedHashSet<>(produces).size() != produces.size()) {
            throw new Refused("--produces names a type twice: " + produces);
        }
        return new Request(name, consumes, List.copyOf(produces), port);
    }

    private static String value(String[] args, int i, String option) throws Refused {
        if (i >= args.length || args[i].startsWith("--")) {
            throw new Refused(option + " needs a value");
        }
        return args[i];
    }

    /** Checks the new catalog, then writes the module and the catalog's entry; returns the module's files. */
    static List<String> create(Path root, Request request) throws IOException, Refused {
        if (Files.exists(root.resolve(request.name()))) {
            throw new Refused(request.name() + "/ exists already: choose another name, or remove it first");
        }
        String catalogText = Files.readString(root.resolve(Catalog.FILE));
        Catalog current = Catalog.parse(catalogText, root, Set.of());
        int port = request.port() != null ? request.port() : current.nextFreePort();
        String entry = entry(request, port, port + 1);
        String updated = (catalogText.endsWith("\n") ? catalogText : catalogText + "\n") + entry;
        Catalog catalog;
        try {
            catalog = Catalog.parse(updated, root, Set.copyOf(request.produces()));
        } catch (Catalog.InvalidCatalogException e) {
            throw new Refused("the catalog with " + request.name() + " cannot be deployed: " + String.join("; ", e.problems()));
        }
        Map<String, String> files = module(request, catalog.services().get(catalog.services().size() - 1));
        for (Map.Entry<String, String> file : files.entrySet()) {
            Path path = root.resolve(file.getKey());
            Files.createDirectories(path.getParent());
            Files.writeString(path, file.getValue(), StandardCharsets.UTF_8);
        }
        Files.writeString(root.resolve(Catalog.FILE), updated, StandardCharsets.UTF_8);
        return List.copyOf(files.keySet());
    }

    static String entry(Request request, int port, int relayPort) {
        List<String> consumed = request.consumes().get(request.exchange());
        StringBuilder entry = new StringBuilder("\n")
                .append("  - name: ").append(request.name()).append('\n')
                .append("    port: ").append(port).append('\n')
                .append("    database: ").append(request.database()).append('\n')
                .append("    about: >-\n      made by deploy/new-service: consumes ").append(String.join(", ", consumed))
                .append(" from ").append(request.exchange())
                .append(request.produces().isEmpty() ? "" : "; produces " + String.join(", ", request.produces())).append(".\n")
                .append("    consumes:\n")
                .append("      - queue: ").append(request.queue()).append('\n')
                .append("        exchange: ").append(request.exchange()).append('\n')
                .append("        events: [").append(String.join(", ", consumed)).append("]\n");
        if (!request.produces().isEmpty()) {
            entry.append("    produces:\n")
                    .append("      exchange: ").append(request.stem()).append('\n')
                    .append("      events: [").append(String.join(", ", request.produces())).append("]\n")
                    .append("      relay: {name: outbox-relay-").append(request.stem()).append(", port: ").append(relayPort)
                    .append(", slot: outbox_relay_").append(request.database()).append("}\n");
        }
        return entry.toString();
    }

    /** The module's files, by path from the repository's root. */
    static Map<String, String> module(Request request, Catalog.Service service) {
        Catalog.Channel channel = service.consumes().get(0);
        boolean produces = !request.produces().isEmpty();
        String first = produces ? request.produces().get(0) : null;
        String summary = "consumes " + String.join(", ", channel.events()) + " from " + channel.exchange()
                + (produces ? ", produces " + String.join(", ", request.produces()) : "");
        Map<String, String> values = new LinkedHashMap<>();
        values.put("name", request.name());
        values.put("stem", request.stem());
        values.put("Stem", request.camel());
        values.put("package", request.javaPackage());
        values.put("summary", summary);
        values.put("port", String.valueOf(service.port()));
        values.put("database", service.database());
        values.put("role", service.role());
        values.put("channel", channel.name());
        values.put("queue", channel.queue());
        values.put("exchange", channel.exchange());
        values.put("routing-keys", String.join(",", channel.events()));
        values.put("dead-letter-exchange", channel.deadLetterExchange());
        values.put("dead-letter-queue", channel.deadLetterQueue());
        values.put("retry-exchange", channel.retryExchange());
        values.put("first-event", channel.events().get(0));
        values.put("outbox-dependency", !produces ? "" : """
                        <dependency>
                            <!-- The outbox: what it sends, in the transaction of its effect. -->
                            <groupId>dev.outboxinbox</groupId>
                            <artifactId>outbox</artifactId>
                        </dependency>
                """);
        values.put("outbox-properties", !produces ? "" : """

                ## What it produces: its outbox (the outbox library: OutboxConfig, OUTBOX_*), which %s publishes
                ## to the exchange %s. The publication and the relay's role: the relay's configuration names the same.
                outbox.publication=${OUTBOX_PUBLICATION:outbox_publication}
                outbox.relay-role=${OUTBOX_RELAY_ROLE:outbox_relay}
                """.formatted(service.produces().relay().name(), service.produces().exchange()));
        values.put("handler-imports", !produces ? "" : "import dev.outboxinbox.outbox.EventIds;\nimport dev.outboxinbox.outbox.OutboxEmitter;\n"
                + "import " + request.javaPackage() + ".events." + first + ";\n");
        values.put("handler-fields", !produces ? "" : """

                    private final OutboxEmitter outbox;

                    %sHandler(OutboxEmitter outbox) {
                        this.outbox = outbox;
                    }
                """.formatted(request.camel()));
        values.put("handler-sends", !produces ? "" : """
                        // Through the outbox, in this transaction: %s publishes it once this commits.%s
                        outbox.send(new %s(EventIds.next(), event.aggregateId(), event.eventId(), Instant.now()));
                """.formatted(service.produces().relay().name(), request.produces().size() < 2 ? ""
                : "\n        // The other types it may send (" + String.join(", ", request.produces().subList(1, request.produces().size()))
                + ") are records in events/, for your effect to send.", first));
        values.put("handler-sends-sentence", !produces ? "" : " and sends a " + first + " through its outbox");
        values.put("test-sends", !produces ? "" : """
                        assertThat(count("SELECT count(*) FROM outbox WHERE type = '%1$s' AND payload->>'causeId' = ?"
                                + " AND NOT jsonb_exists_any(payload, array['eventType', 'schemaVersion', 'aggregateType', 'aggregateId'])",
                                event.eventId().toString())).as("one %1$s in the outbox, its envelope out of its payload").isOne();
                """.formatted(first));
        values.put("relay-sentence", !produces ? ""
                : "; its outbox is published by `" + service.produces().relay().name() + "` to the exchange `"
                + service.produces().exchange() + "`");

        String java = "src/main/java/" + request.javaPackage().replace('.', '/') + "/";
        String test = "src/test/java/" + request.javaPackage().replace('.', '/') + "/";
        Map<String, String> files = new LinkedHashMap<>();
        files.put("pom.xml", fill("pom.xml", values));
        files.put("README.md", fill("README.md", values));
        files.put("src/main/resources/application.properties", fill("application.properties", values));
        files.put("src/main/resources/db/migration/V1__received_events.sql", fill("V1__received_events.sql", values));
        files.put(java + request.camel() + "EventDecoder.java", fill("Decoder.java", values));
        files.put(java + "ReceivedEvent.java", fill("ReceivedEvent.java", values));
        files.put(java + request.camel() + "Handler.java", fill("Handler.java", values));
        for (String type : request.produces()) {
            Map<String, String> typed = new LinkedHashMap<>(values);
            typed.put("type", type);
            typed.put("exchange", service.produces().exchange());
            files.put(java + "events/" + type + ".java", fill("Event.java", typed));
            files.put("src/main/resources/schemas/" + type + ".v1.json", fill("event-schema.json", typed));
        }
        files.put(test + request.camel() + "ServiceTest.java", fill("ServiceTest.java", values));
        Map<String, String> inModule = new LinkedHashMap<>();
        files.forEach((path, content) -> inModule.put(request.name() + "/" + path, content));
        return inModule;
    }

    private static String fill(String template, Map<String, String> values) {
        String text = Forms.template("service/" + template);
        Map<String, String> used = new LinkedHashMap<>();
        values.forEach((key, value) -> {
            if (text.contains("{{" + key + "}}")) {
                used.put(key, value);
            }
        });
        return Forms.fill(text, used);
    }

    private static long lines(Path root, List<String> files) throws IOException {
        long lines = 0;
        for (String file : files) {
            lines += Files.readAllLines(root.resolve(file)).size();
        }
        return lines;
    }
}
