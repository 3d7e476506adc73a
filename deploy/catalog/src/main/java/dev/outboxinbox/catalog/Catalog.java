package dev.outboxinbox.catalog;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.outboxinbox.events.EventSchema;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * deploy/catalog.yaml: the services of the system, the relay instance that publishes each one's outbox,
 * and what each owns and reads. Read strictly (an unknown key is an error, as a misspelt one would
 * otherwise be dropped) and checked as a whole: {@link #load} refuses a catalog no deployment could run,
 * with a message that says what to change.
 */
public record Catalog(Relay relay, List<Service> services) {

    public static final String FILE = "deploy/catalog.yaml";
    /** A service's name: a DNS label (compose and Kubernetes use it as a host name) ending in -service. */
    static final Pattern SERVICE_NAME = Pattern.compile("[a-z][a-z0-9]*(-[a-z0-9]+)*-service");
    static final Pattern RELAY_NAME = Pattern.compile("outbox-relay(-[a-z0-9]+)*");
    /** A PostgreSQL identifier that needs no quoting, within its 63 bytes. */
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z][a-z0-9_]{0,62}");
    /** An exchange or queue prefix of the system's own: a dotted lower-case name, not the broker's amq.* */
    private static final Pattern BROKER_NAME = Pattern.compile("(?!amq\\.)[a-z][a-z0-9-]*(\\.[a-z0-9-]+)*");
    /** What an environment value may hold: it is sourced by bash (deploy/local) and read by compose, unquoted there. */
    private static final Pattern SAFE_VALUE = Pattern.compile("[A-Za-z0-9_./:{}@,+=-]*");
    /** Databases every PostgreSQL has. */
    private static final Set<String> RESERVED_DATABASES = Set.of("postgres", "template0", "template1");
    private static final Pattern VARIABLE = Pattern.compile("[A-Z][A-Z0-9_]*");
    /** A SmallRye channel's name here: it is part of configuration keys and environment variables. */
    private static final Pattern CHANNEL_NAME = Pattern.compile("[a-z][a-z0-9]*(-[a-z0-9]+)*");
    /**
     * Ports the system's other parts listen on, on a developer's machine: PostgreSQL, RabbitMQ and its UI, the
     * observability profile, deploy/local/demo's controls.
     */
    static final Set<Integer> RESERVED_PORTS = Set.of(5432, 5672, 15672, 9090, 16686, 4317, 4318, 3000, 8090);

    /** The relay: one role, one offsets database, one module; an instance per producing service. */
    public record Relay(String module, String role, String database, String dbPassword, String brokerPassword, String about) {
    }

    public record Service(String name, String module, Integer port, String database, String role, String owns,
            String dbPassword, String brokerPassword, String about, List<Channel> consumes, Produces produces,
            Map<String, String> environment, Kubernetes kubernetes) {

        /** The part of the name before -service: order for order-service. */
        String stem() {
            return name.substring(0, name.length() - "-service".length());
        }

        public String module() {
            return module != null ? module : name;
        }

        public String role() {
            return role != null ? role : name.replace('-', '_');
        }

        /** The prefix of the queues and exchanges the service declares and owns: order for order.*. */
        public String owns() {
            return owns != null ? owns : stem();
        }

        public String dbPassword() {
            return dbPassword != null ? dbPassword : variable(stem()) + "_DB_PASSWORD";
        }

        public String brokerPassword() {
            return brokerPassword != null ? brokerPassword : variable(stem()) + "_BROKER_PASSWORD";
        }

        public List<Channel> consumes() {
            return consumes != null ? consumes : List.of();
        }

        public Map<String, String> environment() {
            return environment != null ? environment : Map.of();
        }

        public Kubernetes kubernetes() {
            return kubernetes != null ? kubernetes : new Kubernetes(null, null, null);
        }

    }

    /**
     * An inbox channel: a queue (or its partitions) bound to an exchange for some event types, read by the
     * service's {@code @Incoming("<channel>")} method (its attributes are {@code mp.messaging.incoming.<channel>.*}),
     * or by its {@code BatchEffects} (then under {@code inbox.*}, and the service has this one channel only). Its
     * dead letters go through its own fanout exchange and come back through another (the library's defaults,
     * {@code <queue>.dead-letter} and {@code <queue>.retry}): one shared by two channels would hand each the other's.
     *
     * @param channel the SmallRye channel's name; default: the exchange's
     */
    public record Channel(String channel, String queue, String exchange, List<String> events, Integer partitions,
                          String deadLetterExchange, String retryExchange) {

        public Channel {
            partitions = partitions != null ? partitions : 0;
        }

        public String name() {
            return channel != null ? channel : exchange;
        }

        public String deadLetterQueue() {
            return queue + ".dead-letter";
        }

        @Override
        public String deadLetterExchange() {
            return deadLetterExchange != null ? deadLetterExchange : queue + ".dead-letter";
        }

        @Override
        public String retryExchange() {
            return retryExchange != null ? retryExchange : queue + ".retry";
        }
    }

    /** What a service's outbox holds, the exchange its relay publishes it to, and that relay instance. */
    public record Produces(String exchange, List<String> events, RelayInstance relay) {
    }

    public record RelayInstance(String name, Integer port, String slot, String cpu) {

        public String cpu() {
            return cpu != null ? cpu : Kubernetes.DEFAULT_CPU;
        }
    }

    public record Kubernetes(Integer replicas, String cpu, Map<String, String> environment) {

        static final String DEFAULT_CPU = "500m";

        public Kubernetes {
            replicas = replicas != null ? replicas : 2;
        }

        public String cpu() {
            return cpu != null ? cpu : DEFAULT_CPU;
        }

        public Map<String, String> environment() {
            return environment != null ? environment : Map.of();
        }
    }

    /** order → ORDER, the-thing → THE_THING. */
    static String variable(String stem) {
        return stem.toUpperCase().replace('-', '_');
    }

    private static ObjectMapper yaml() {
        return new ObjectMapper(new YAMLFactory())
                .setPropertyNamingStrategy(PropertyNamingStrategies.KEBAB_CASE)
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
    }

    /**
     * The catalog of this checkout. A type a service produces is known to the contract, or declared by the
     * service itself (its schema, {@code <module>/src/main/resources/schemas/<Type>.v1.json}: an event no
     * other service consumes yet, as deploy/new-service writes one).
     */
    public static Catalog load(Path root) throws IOException {
        return parse(Files.readString(root.resolve(FILE)), root, Set.of());
    }

    /** A catalog by itself: every type it names must be the contract's. */
    public static Catalog parse(String text) throws IOException {
        return parse(text, null, Set.of());
    }

    /**
     * @param root     the checkout whose modules may declare the types they produce (null: none)
     * @param declared event types declared besides (a module about to be written)
     */
    public static Catalog parse(String text, Path root, Set<String> declared) throws IOException {
        Catalog catalog = yaml().readValue(text, Catalog.class);
        Set<String> all = new java.util.HashSet<>(declared);
        if (root != null && catalog.services() != null) {
            for (Service service : catalog.services()) {
                if (service.name() != null && service.produces() != null && service.produces().events() != null) {
                    service.produces().events().stream()
                            .filter(type -> Files.isRegularFile(root.resolve(service.module())
                                    .resolve("src/main/resources/schemas/" + type + ".v1.json")))
                            .forEach(all::add);
                }
            }
        }
        return checked(catalog, all);
    }

    private static Catalog checked(Catalog catalog, Set<String> declared) throws InvalidCatalogException {
        List<String> problems = catalog.problems(declared);
        if (!problems.isEmpty()) {
            throw new InvalidCatalogException(problems);
        }
        return catalog;
    }

    public static final class InvalidCatalogException extends IOException {
        private final List<String> problems;

        InvalidCatalogException(List<String> problems) {
            super(FILE + ": " + String.join("; ", problems));
            this.problems = List.copyOf(problems);
        }

        public List<String> problems() {
            return problems;
        }
    }

    /** Every process the catalog deploys, services then relay instances, in the catalog's order. */
    public List<Deployable> deployables() {
        List<Deployable> all = new ArrayList<>();
        services.forEach(s -> all.add(Deployable.of(this, s)));
        services.stream().filter(s -> s.produces() != null)
                .forEach(s -> all.add(Deployable.relayOf(this, s)));
        return all;
    }

    public Deployable deployable(String name) {
        return deployables().stream().filter(d -> d.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no " + name + " in " + FILE));
    }

    /** The exchanges the relay instances publish to. */
    public List<String> producedExchanges() {
        return services.stream().filter(s -> s.produces() != null).map(s -> s.produces().exchange()).toList();
    }

    /** Every password variable the deployment needs from .env, databases first, in the catalog's order. */
    public List<String> databasePasswords() {
        List<String> variables = new ArrayList<>();
        services.forEach(s -> variables.add(s.dbPassword()));
        variables.add(relay.dbPassword());
        return variables;
    }

    public List<String> brokerPasswords() {
        List<String> variables = new ArrayList<>();
        services.forEach(s -> variables.add(s.brokerPassword()));
        variables.add(relay.brokerPassword());
        return variables;
    }

    /** What no deployment could run, each with what to do. Empty for a good catalog. */
    List<String> problems(Set<String> declared) {
        List<String> problems = new ArrayList<>();
        if (relay == null) {
            return List.of("relay: missing (the relay's module, role, database and passwords)");
        }
        if (services == null || services.isEmpty()) {
            return List.of("services: none");
        }
        if (Stream.of(relay.module(), relay.role(), relay.database(), relay.dbPassword(), relay.brokerPassword()).anyMatch(Objects::isNull)
                || relay.dbPassword().equals(relay.brokerPassword())) {
            return List.of("relay: module, role, database, db-password and broker-password are each required, the two passwords"
                    + " in variables of their own");
        }
        Map<String, String> names = new HashMap<>();
        Map<Integer, String> ports = new HashMap<>();
        Map<String, String> roles = new HashMap<>(Map.of(relay.role(), "the relay"));
        Map<String, String> databases = new HashMap<>(Map.of(relay.database(), "the relay"));
        Map<String, String> prefixes = new HashMap<>();
        Map<String, String> queues = new HashMap<>();
        Map<String, String> exchanges = new HashMap<>();
        Map<String, String> slots = new HashMap<>();
        // Each password its own: a service must never share another's (or the relay's) secret.
        Map<String, String> passwords = new HashMap<>(Map.of(relay.dbPassword(), "the relay", relay.brokerPassword(), "the relay"));
        for (Service service : services) {
            String name = service.name();
            if (name == null || !SERVICE_NAME.matcher(name).matches() || name.length() > 40) {
                problems.add("service name '" + name + "': lower-case letters, digits and dashes, starting with a letter"
                        + " and ending in -service, 40 characters at most (it is a host name in compose and Kubernetes, and"
                        + " its relay's is outbox-relay-<name>), e.g. shipping-service");
                continue;
            }
            taken(problems, names, name, name, "name");
            if (service.port() == null) {
                problems.add(name + ": no port (the HTTP port it listens on, e.g. " + nextFreePort() + ")");
            } else {
                port(problems, ports, service.port(), name);
            }
            if (service.database() == null || !IDENTIFIER.matcher(service.database()).matches()) {
                problems.add(name + ": database '" + service.database() + "': a lower-case identifier, e.g. " + service.stem().replace('-', '_'));
            } else if (RESERVED_DATABASES.contains(service.database())) {
                problems.add(name + ": database '" + service.database() + "' is PostgreSQL's own: choose another, e.g. "
                        + service.stem().replace('-', '_'));
            } else {
                taken(problems, databases, service.database(), name, "database");
            }
            if (!IDENTIFIER.matcher(service.role()).matches()) {
                problems.add(name + ": role '" + service.role() + "': a lower-case identifier");
            } else {
                taken(problems, roles, service.role(), name, "role");
            }
            if (!BROKER_NAME.matcher(service.owns()).matches()) {
                problems.add(name + ": owns '" + service.owns() + "': a lower-case name (dots between parts), not amq.*");
            } else {
                taken(problems, prefixes, service.owns(), name, "queue prefix (owns)");
            }
            for (String variable : List.of(service.dbPassword(), service.brokerPassword())) {
                if (!VARIABLE.matcher(variable).matches()) {
                    problems.add(name + ": password variable '" + variable + "': upper-case letters, digits and _");
                } else {
                    taken(problems, passwords, variable, name, "password variable");
                }
            }
            for (Channel channel : service.consumes()) {
                if (channel.queue() == null || !channel.queue().startsWith(service.owns() + ".")) {
                    problems.add(name + ": queue '" + channel.queue() + "': a service's queues start with its prefix, "
                            + service.owns() + ". (its broker user may declare and read only those)");
                } else {
                    taken(problems, queues, channel.queue(), name, "queue");
                }
                if (channel.exchange() == null) {
                    problems.add(name + ": queue " + channel.queue() + " has no exchange to bind to");
                }
                events(problems, name + ": queue " + channel.queue(), channel.events(), Set.of());
                if (channel.partitions() < 0 || channel.partitions() > 64) {
                    problems.add(name + ": queue " + channel.queue() + ": partitions between 0 (one queue) and 64");
                }
            }
            Set<String> channels = new HashSet<>();
            Set<String> ownNames = new HashSet<>();
            for (Channel channel : service.consumes()) {
                // A queue outside the prefix is refused above; its derived exchanges would only say it again.
                if (channel.queue() != null && channel.queue().startsWith(service.owns() + ".")) {
                    ownNames.add(channel.queue());
                    for (String own : List.of(channel.deadLetterExchange(), channel.retryExchange())) {
                        if (!own.startsWith(service.owns() + ".") || !BROKER_NAME.matcher(own).matches()) {
                            problems.add(name + ": queue " + channel.queue() + ": '" + own + "' is not a name under the"
                                    + " service's prefix " + service.owns() + ". (its broker user may declare only those)");
                        } else if (!ownNames.add(own)) {
                            problems.add(name + ": '" + own + "' is declared by two of its channels: each has its own queue,"
                                    + " dead-letter exchange and retry exchange");
                        }
                    }
                }
                if (channel.name() != null && !channels.add(channel.name())) {
                    problems.add(name + ": two queues are read on the channel '" + channel.name() + "': give each its own"
                            + " (channel: …, the name of its @Incoming method's channel)");
                }
                if (channel.channel() != null && !CHANNEL_NAME.matcher(channel.channel()).matches()) {
                    problems.add(name + ": channel '" + channel.channel() + "': lower-case letters, digits and -");
                }
            }
            Produces produces = service.produces();
            if (produces != null) {
                if (produces.exchange() == null || !BROKER_NAME.matcher(produces.exchange()).matches()) {
                    problems.add(name + ": produces: exchange '" + produces.exchange() + "': the exchange its relay publishes to"
                            + " (the events' aggregate type), a lower-case name, not amq.*");
                } else {
                    taken(problems, exchanges, produces.exchange(), name, "exchange");
                }
                events(problems, name + ": produces", produces.events(), declared);
                RelayInstance instance = produces.relay();
                if (instance == null || instance.name() == null || !RELAY_NAME.matcher(instance.name()).matches()) {
                    problems.add(name + ": produces: relay: a name, outbox-relay or outbox-relay-" + service.stem()
                            + " (a name of its own for each producing service), a port and a slot");
                } else {
                    taken(problems, names, instance.name(), instance.name(), "name");
                    if (instance.port() == null) {
                        problems.add(instance.name() + ": no port (e.g. " + nextFreePort() + ")");
                    } else {
                        port(problems, ports, instance.port(), instance.name());
                    }
                    if (instance.slot() == null || !IDENTIFIER.matcher(instance.slot()).matches()) {
                        problems.add(instance.name() + ": slot '" + instance.slot() + "': a lower-case identifier, e.g. "
                                + instance.name().replace('-', '_'));
                    } else {
                        taken(problems, slots, instance.slot(), instance.name(), "replication slot");
                    }
                }
            }
            for (Map.Entry<String, String> variable : service.environment().entrySet()) {
                if (!VARIABLE.matcher(variable.getKey()).matches()) {
                    problems.add(name + ": environment variable '" + variable.getKey() + "': upper-case letters, digits and _");
                }
                String kubernetes = service.kubernetes().environment().get(variable.getKey());
                for (String value : kubernetes == null ? List.of(variable.getValue()) : List.of(variable.getValue(), kubernetes)) {
                    if (value == null || !SAFE_VALUE.matcher(value).matches()) {
                        problems.add(name + ": " + variable.getKey() + "='" + value + "': letters, digits and _./:{}@,+=- only"
                                + " (deploy/local sources it and compose reads it unquoted; a secret goes in .env, not here)");
                    }
                }
            }
            for (String variable : service.kubernetes().environment().keySet()) {
                if (!service.environment().containsKey(variable)) {
                    problems.add(name + ": kubernetes: environment: " + variable + " is not in its environment (the value"
                            + " every form gives it; kubernetes only overrides one)");
                }
            }
        }
        Set<String> knownExchanges = new LinkedHashSet<>(exchanges.keySet());
        for (Service service : services) {
            for (Channel channel : service.consumes()) {
                if (channel.exchange() != null && !knownExchanges.contains(channel.exchange())) {
                    problems.add(service.name() + ": queue " + channel.queue() + " binds to exchange '" + channel.exchange()
                            + "', which no service produces (one of " + knownExchanges + ")");
                } else if (channel.exchange() != null && channel.events() != null) {
                    List<String> published = services.stream().filter(s -> s.produces() != null
                            && channel.exchange().equals(s.produces().exchange())).findFirst()
                            .map(s -> s.produces().events()).orElse(List.of());
                    for (String event : channel.events()) {
                        if (!published.contains(event) && !EventSchema.versions(event).isEmpty()) {
                            problems.add(service.name() + ": queue " + channel.queue() + " takes " + event + " from '"
                                    + channel.exchange() + "', where it is not published (" + channel.exchange() + " carries "
                                    + published + ")");
                        }
                    }
                }
            }
            for (Map.Entry<String, String> variable : service.environment().entrySet()) {
                var reference = Deployable.URL.matcher(variable.getValue());
                while (reference.find()) {
                    if (!names.containsKey(reference.group(1))) {
                        problems.add(service.name() + ": " + variable.getKey() + " names " + reference.group()
                                + ", and there is no " + reference.group(1) + " (one of " + names.keySet().stream().sorted().toList() + ")");
                    }
                }
            }
        }
        return problems;
    }

    private static void taken(List<String> problems, Map<String, String> owners, String value, String owner, String what) {
        String earlier = owners.putIfAbsent(value, owner);
        if (earlier != null) {
            problems.add(owner + ": " + what + " '" + value + "' is taken by " + earlier + ": choose another");
        }
    }

    private void port(List<String> problems, Map<Integer, String> ports, int port, String owner) {
        if (port < 1024 || port > 65535) {
            problems.add(owner + ": port " + port + " is outside 1024-65535");
        } else if (RESERVED_PORTS.contains(port)) {
            problems.add(owner + ": port " + port + " is PostgreSQL's, RabbitMQ's or the observability profile's: choose another, e.g. "
                    + nextFreePort());
        } else if (ports.containsKey(port)) {
            problems.add(owner + ": port " + port + " is taken by " + ports.get(port) + ": choose another, e.g. " + nextFreePort());
        } else {
            ports.put(port, owner);
        }
    }

    /** The first port after the highest the catalog uses: what a new entry should take. */
    public int nextFreePort() {
        return Stream.concat(
                        services == null ? Stream.empty() : services.stream().map(Service::port),
                        services == null ? Stream.empty() : services.stream().map(Service::produces)
                                .filter(Objects::nonNull).map(Produces::relay).filter(Objects::nonNull).map(RelayInstance::port))
                .filter(Objects::nonNull).mapToInt(Integer::intValue).max().orElse(8080) + 1;
    }

    private static void events(List<String> problems, String where, List<String> events, Set<String> declared) {
        if (events == null || events.isEmpty()) {
            problems.add(where + ": no events");
            return;
        }
        for (String event : events) {
            if (EventSchema.versions(event).isEmpty() && !declared.contains(event)) {
                problems.add(where + ": unknown event type '" + event + "': add its schema to shared-events/contract first"
                        + " (ADD-A-SERVICE.md, \"A producer\", step 2), or use one of " + EventSchema.types());
            }
        }
    }
}
