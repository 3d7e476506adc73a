package dev.outboxinbox.catalog;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.catalog.Catalog.Channel;
import dev.outboxinbox.catalog.Catalog.Service;
import dev.outboxinbox.catalog.Deployable.Form;
import dev.outboxinbox.catalog.Deployable.Variable;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Every file the catalog makes, by its path from the repository's root: what deploy/catalog/generate
 * writes and CatalogFormsTest compares. The parts that are not per service (PostgreSQL, RabbitMQ, the
 * observability profile, the Kubernetes operators' resources) are templates beside this class, with a
 * {@code {{name}}} where the catalog's part goes.
 */
public final class Forms {

    static final String GENERATED = "Generated from deploy/catalog.yaml by deploy/catalog/generate: edit the catalog, not this file.";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** What YAML reads as the same string unquoted: no indicator first, no ": " or " #" inside, no colon or space last. */
    private static final Pattern PLAIN_YAML = Pattern.compile("(?!.*(: | #))[^-?:,\\[\\]{}#&*!|>'\"%@`\\s][^\\n]*(?<![:\\s])");
    private static final Pattern YAML_KEYWORD = Pattern.compile("(?i)true|false|yes|no|on|off|null|~|[0-9.]+");

    static final String MODULES_FROM = "<!-- The services of deploy/catalog.yaml and their relay: deploy/catalog/generate writes these lines. -->";
    static final String MODULES_TO = "<!-- (the catalog's modules end here) -->";
    static final String PASSWORDS_ADDED = "# A service's passwords, added by deploy/catalog/generate for deploy/catalog.yaml (demo values: set your own for anything shared).";

    private final Catalog catalog;
    /** The checkout, whose pom.xml and .env get the catalog's part spliced in; null: only the forms made whole. */
    private final Path root;

    public Forms(Catalog catalog) {
        this(catalog, null);
    }

    public Forms(Catalog catalog, Path root) {
        this.catalog = catalog;
        this.root = root;
    }

    /** Path → content, in a fixed order. */
    public Map<String, String> all() {
        Map<String, String> files = new LinkedHashMap<>();
        for (Deployable deployable : catalog.deployables()) {
            files.put("deploy/local/services/" + deployable.name() + ".env", localEnv(deployable));
        }
        files.put("docker-compose.yml", compose());
        for (Deployable deployable : catalog.deployables()) {
            files.put("deploy/kubernetes/" + deployable.name() + ".yaml", kubernetes(deployable));
        }
        files.put("deploy/kubernetes/kustomization.yaml", kustomization());
        files.put("deploy/kubernetes/setup-jobs.yaml", setupJobs());
        files.put("deploy/postgres/create-databases.sql", databases());
        files.put("deploy/rabbitmq/users", brokerUsers());
        files.put("deploy/rabbitmq/definitions.json", brokerDefinitions());
        files.put("deploy/observability/prometheus.yml", prometheus());
        if (root != null) {
            files.put("pom.xml", rootPom(read("pom.xml")));
            files.put(".env", environment(read(".env")));
        }
        return files;
    }

    private String read(String path) {
        try {
            return Files.readString(root.resolve(path), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // --- the reactor and the demo's credentials: the catalog's part of files that are not its own ----

    /** The root pom with the services' modules (and the relay's) between its two markers, in the catalog's order. */
    String rootPom(String pom) {
        int from = pom.indexOf(MODULES_FROM);
        int to = pom.indexOf(MODULES_TO);
        if (from < 0 || to < from) {
            throw new IllegalStateException("pom.xml has no " + MODULES_FROM + " … " + MODULES_TO + " in its <modules>");
        }
        String indent = pom.substring(pom.lastIndexOf('\n', from) + 1, from);
        Set<String> modules = new LinkedHashSet<>();
        catalog.deployables().forEach(d -> modules.add(d.module()));
        StringBuilder lines = new StringBuilder(MODULES_FROM).append('\n');
        modules.forEach(module -> lines.append(indent).append("<module>").append(module).append("</module>\n"));
        return pom.substring(0, from) + lines.append(indent) + pom.substring(to);
    }

    /** .env with a demo value for each password the catalog names and it lacks, added at its end; the rest as it is. */
    String environment(String env) {
        Set<String> defined = new LinkedHashSet<>();
        env.lines().map(line -> line.split("=", 2)[0].strip()).forEach(defined::add);
        List<String> variables = new ArrayList<>(catalog.databasePasswords());
        variables.addAll(catalog.brokerPasswords());
        StringBuilder added = new StringBuilder();
        for (String variable : variables) {
            if (defined.add(variable)) {
                added.append(variable).append('=').append(variable.toLowerCase().replace("_password", "").replace('_', '-'))
                        .append("-demo-secret\n");
            }
        }
        if (added.length() == 0) {
            return env;
        }
        String text = env.endsWith("\n") ? env : env + "\n";
        return text + (text.contains(PASSWORDS_ADDED) ? "" : "\n" + PASSWORDS_ADDED + "\n") + added;
    }

    /** The directories whose files are all the catalog's: a file there that it does not make is stale. */
    public static List<String> ownedDirectories() {
        return List.of("deploy/local/services");
    }

    // --- deploy/local -------------------------------------------------------------------------------

    String localEnv(Deployable deployable) {
        StringBuilder out = new StringBuilder();
        out.append("# ").append(deployable.name()).append(" under deploy/local: the variables docker-compose.yml gives its container,\n")
                .append("# with this machine's PostgreSQL and RabbitMQ (${POSTGRES_HOST}, ${RABBITMQ_HOST}, …).\n")
                .append("# ").append(GENERATED).append('\n')
                // Read by deploy/local/lib.sh: which jar runs it, and whether it stops first (a relay).
                .append("# module: ").append(deployable.module()).append('\n')
                .append("# kind: ").append(deployable.relay() ? "relay" : "service").append('\n');
        for (Variable variable : deployable.environment(Form.LOCAL)) {
            comment(out, "", variable.comment());
            out.append(variable.name()).append('=').append(switch (variable.kind()) {
                case VALUE -> Form.LOCAL.fill(variable.value(), catalog);
                case SECRET, SETTING -> "${" + variable.value() + "}";
                case POD_NAME -> throw new IllegalStateException("Kubernetes only");
            }).append('\n');
        }
        return out.toString();
    }

    // --- docker compose -----------------------------------------------------------------------------

    String compose() {
        StringBuilder services = new StringBuilder();
        for (Deployable deployable : catalog.deployables()) {
            services.append('\n');
            comment(services, "  ", deployable.name() + ": " + deployable.about());
            services.append("  ").append(deployable.name()).append(":\n")
                    .append("    <<: *service\n")
                    .append("    build:\n      <<: *build\n      args:\n        SERVICE: ").append(deployable.module()).append('\n')
                    .append("    environment:\n");
            for (Variable variable : deployable.environment(Form.COMPOSE)) {
                comment(services, "      ", variable.comment());
                services.append("      ").append(variable.name()).append(": ").append(yaml(switch (variable.kind()) {
                    case VALUE -> Form.COMPOSE.fill(variable.value(), catalog);
                    case SECRET, SETTING -> required(variable.value());
                    case POD_NAME -> throw new IllegalStateException("Kubernetes only");
                })).append('\n');
            }
            int port = deployable.port();
            services.append("    ports:\n")
                    .append("      - \"${").append(hostPortVariable(deployable.name())).append(":-").append(port).append("}:").append(port).append("\"\n")
                    .append("    healthcheck:\n")
                    .append("      test: [\"CMD\", \"curl\", \"-fs\", \"http://localhost:").append(port).append("/q/health/ready\"]\n")
                    .append("      interval: 3s\n      timeout: 3s\n      retries: 60\n")
                    .append("    depends_on:\n")
                    .append("      postgres-setup:\n        condition: service_completed_successfully\n")
                    .append("      rabbitmq-setup:\n        condition: service_completed_successfully\n");
        }
        return fill(template("docker-compose.yml"), Map.of(
                "postgres-setup-environment", composeVariables(catalog.databasePasswords()),
                "rabbitmq-setup-environment", composeVariables(catalog.brokerPasswords()),
                "services", services.toString().stripTrailing()));
    }

    /** ORDER_SERVICE_HOST_PORT: the host port compose publishes order-service on. */
    public static String hostPortVariable(String name) {
        return Catalog.variable(name) + "_HOST_PORT";
    }

    private static String composeVariables(List<String> variables) {
        return variables.stream().map(v -> "      " + v + ": " + required(v)).collect(Collectors.joining("\n"));
    }

    /** How compose takes a variable of .env: required, with a message that names it. */
    static String required(String variable) {
        return "${" + variable + ":?" + variable + " is not set (see .env)}";
    }

    // --- Kubernetes ---------------------------------------------------------------------------------

    String kubernetes(Deployable deployable) {
        StringBuilder env = new StringBuilder();
        for (Variable variable : deployable.environment(Form.KUBERNETES)) {
            comment(env, "            ", variable.comment());
            env.append("            - name: ").append(variable.name()).append('\n');
            switch (variable.kind()) {
                case VALUE -> env.append("              value: ").append(quoted(Form.KUBERNETES.fill(
                        variable.kubernetesValue() != null ? variable.kubernetesValue() : variable.value(), catalog))).append('\n');
                case SETTING -> env.append("              value: ").append(quoted(variable.kubernetesValue())).append('\n');
                case SECRET -> env.append("              valueFrom:\n                secretKeyRef: {name: outbox-inbox-credentials, key: ")
                        .append(variable.value()).append("}\n");
                case POD_NAME -> env.append("              valueFrom:\n                fieldRef: {fieldPath: metadata.name}\n");
            }
        }
        StringBuilder header = new StringBuilder();
        comment(header, "", deployable.name() + ": " + deployable.about());
        header.append("# ").append(GENERATED).append('\n');
        return fill(template("kubernetes-deployable.yaml"), Map.of(
                "header", header.toString().stripTrailing(),
                "name", deployable.name(),
                "module", deployable.module(),
                "port", String.valueOf(deployable.port()),
                "replicas", String.valueOf(deployable.replicas()),
                "strategy", deployable.relay()
                        ? "    # One at a time, no surge: the leader and its standby, never a third asking for the lock.\n"
                        + "    type: RollingUpdate\n    rollingUpdate:\n      maxSurge: 0\n      maxUnavailable: 1"
                        : "    type: RollingUpdate\n    rollingUpdate:\n      maxSurge: 1\n      maxUnavailable: 0",
                "environment", env.toString().stripTrailing(),
                "cpu", deployable.cpu(),
                // Partitions move to the others when one instance goes: one at a time keeps the moves small.
                "disruption", deployable.partitioned() ? "maxUnavailable: 1" : "minAvailable: 1"));
    }

    String kustomization() {
        List<Deployable> deployables = catalog.deployables();
        String resources = deployables.stream().map(d -> "  - " + d.name() + ".yaml").collect(Collectors.joining("\n"));
        Set<String> modules = new LinkedHashSet<>();
        deployables.forEach(d -> modules.add(d.module()));
        String images = modules.stream().map(m -> "  - name: outbox-inbox/" + m + "\n    newTag: \"1.0.0-SNAPSHOT\"")
                .collect(Collectors.joining("\n"));
        return fill(template("kustomization.yaml"), Map.of("resources", resources, "images", images));
    }

    String setupJobs() {
        return fill(template("setup-jobs.yaml"), Map.of(
                "database-passwords", secretVariables(catalog.databasePasswords()),
                "broker-passwords", secretVariables(catalog.brokerPasswords())));
    }

    private static String secretVariables(List<String> variables) {
        return variables.stream().map(v -> "            - name: " + v + "\n              valueFrom:\n"
                + "                secretKeyRef: {name: outbox-inbox-credentials, key: " + v + "}").collect(Collectors.joining("\n"));
    }

    // --- PostgreSQL ---------------------------------------------------------------------------------

    String databases() {
        Catalog.Relay relay = catalog.relay();
        StringBuilder out = new StringBuilder();
        out.append("""
                -- Databases and roles of the system, least privilege, idempotent. Run as a superuser, the passwords in the
                -- environment (.env; psql 15 or newer reads them with \\getenv):
                --   psql -v ON_ERROR_STOP=1 -f deploy/postgres/create-databases.sql
                -- deploy/local/up and compose's postgres-setup run it on every start, so changing .env is enough.
                --
                """);
        for (Service service : catalog.services()) {
            out.append("--   ").append(service.role()).append(": owns database ").append(service.database())
                    .append(" (runs its migrations").append(service.produces() != null ? ", creates its outbox's publication" : "")
                    .append(")\n");
        }
        out.append("--   ").append(relay.role()).append(": REPLICATION; reads the producers' databases only through its slots, SELECT on\n")
                .append("--     their outbox alone (granted by the outbox library's migration in each service); owns database\n")
                .append("--     ").append(relay.database()).append(" (offsets, a table per relay instance)\n")
                .append("-- ").append(GENERATED).append("\n\n");
        List<String[]> roles = new ArrayList<>();
        catalog.services().forEach(s -> roles.add(new String[] {s.role(), s.dbPassword(), "LOGIN"}));
        roles.add(new String[] {relay.role(), relay.dbPassword(), "LOGIN REPLICATION"});
        for (String[] role : roles) {
            out.append("\\getenv ").append(role[1]).append(' ').append(role[1]).append('\n')
                    .append("\\if :{?").append(role[1]).append("}\n\\else\n")
                    .append("DO $$ BEGIN RAISE EXCEPTION '").append(role[1]).append(" is not set (see .env)'; END $$;\n")
                    .append("\\endif\n");
        }
        out.append('\n');
        for (String[] role : roles) {
            out.append("SELECT format('CREATE ROLE ").append(role[0]).append(' ').append(role[2]).append(" PASSWORD %L', :'")
                    .append(role[1]).append("')\nWHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '").append(role[0])
                    .append("') \\gexec\n");
        }
        out.append("-- Passwords follow the environment on every run.\n");
        for (String[] role : roles) {
            out.append("ALTER ROLE ").append(role[0]).append(" PASSWORD :'").append(role[1]).append("';\n");
        }
        out.append('\n');
        Map<String, String> owners = new LinkedHashMap<>();
        catalog.services().forEach(s -> owners.put(s.database(), s.role()));
        owners.put(relay.database(), relay.role());
        owners.forEach((database, owner) -> out.append("SELECT 'CREATE DATABASE ").append(database).append(" OWNER ").append(owner)
                .append("'\nWHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '").append(database).append("') \\gexec\n"));
        out.append("\n-- Only the owner, and the relay where it reads an outbox, may connect.\n");
        for (Service service : catalog.services()) {
            out.append("REVOKE CONNECT ON DATABASE ").append(service.database()).append(" FROM PUBLIC;\n")
                    .append("GRANT CONNECT ON DATABASE ").append(service.database()).append(" TO ").append(service.role())
                    .append(service.produces() != null ? ", " + relay.role() : "").append(";\n");
        }
        out.append("REVOKE CONNECT ON DATABASE ").append(relay.database()).append(" FROM PUBLIC;\n")
                .append("GRANT CONNECT ON DATABASE ").append(relay.database()).append(" TO ").append(relay.role()).append(";\n");
        return out.toString();
    }

    // --- RabbitMQ -----------------------------------------------------------------------------------

    String brokerUsers() {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"# user", "password variable", "configure", "write", "read"});
        for (Service service : catalog.services()) {
            String own = escape(service.owns()) + "\\..*";
            List<String> consumed = service.consumes().stream().map(Channel::exchange).distinct().map(Forms::escape).toList();
            String readable = consumed.isEmpty() ? "^" + own + "$" : "^(" + String.join("|", consumed) + "|" + own + ")$";
            rows.add(new String[] {service.role(), service.brokerPassword(), readable, "^" + own + "$", readable});
        }
        List<String> published = new ArrayList<>(catalog.producedExchanges().stream().map(Forms::escape).toList());
        published.add(escape(Topology.RELAY_PARKING_EXCHANGE));
        String relayExchanges = "^(" + String.join("|", published) + ")$";
        rows.add(new String[] {catalog.relay().role(), catalog.relay().brokerPassword(), relayExchanges, relayExchanges,
                "^" + escape(Topology.RELAY_PARKING_QUEUE) + "$"});
        int[] widths = new int[4];
        for (String[] row : rows) {
            for (int i = 0; i < 4; i++) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        StringBuilder out = new StringBuilder("""
                # RabbitMQ users of the system, one per service, least privilege on the virtual host "/".
                # Read by deploy/rabbitmq/create-users (deploy/local/up runs it with rabbitmqctl, compose's and
                # Kubernetes' rabbitmq-setup through the management HTTP API). Passwords come from the named
                # environment variable. Each service declares, reads and dead-letters its own queues and exchanges
                # (its prefix: order.*), binds them to the exchanges it consumes (read on those, configure to
                # declare one its relay has not yet), and publishes only its dead letters and their redeliveries:
                # its events go out through its outbox and the relay. The relay declares and publishes to the
                # producers' exchanges, and owns the parking exchange and queue for what the broker returned.
                """).append("# ").append(GENERATED).append("\n#\n");
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < 4; i++) {
                line.append(row[i]).append(" ".repeat(widths[i] - row[i].length() + 2));
            }
            out.append(line.append(row[4]).toString().stripTrailing()).append('\n');
        }
        return out.toString();
    }

    private static String escape(String name) {
        return name.replace(".", "\\.");
    }

    String brokerDefinitions() {
        List<Map<String, Object>> exchanges = new ArrayList<>();
        List<Map<String, Object>> queues = new ArrayList<>();
        List<Map<String, Object>> bindings = new ArrayList<>();
        for (String exchange : catalog.producedExchanges()) {
            exchanges.add(exchange(exchange, "topic", Map.of()));
        }
        exchanges.add(exchange(Topology.RELAY_PARKING_EXCHANGE, "fanout", Map.of()));
        queues.add(queue(Topology.RELAY_PARKING_QUEUE, Topology.relayParkingQueueArguments()));
        bindings.add(binding(Topology.RELAY_PARKING_EXCHANGE, Topology.RELAY_PARKING_QUEUE, "queue", ""));
        for (Service service : catalog.services()) {
            if (service.consumes().isEmpty()) {
                continue;
            }
            for (Channel channel : service.consumes()) {
                String deadLetterExchange = channel.deadLetterExchange();
                String retryExchange = channel.retryExchange();
                exchanges.add(exchange(deadLetterExchange, "fanout", Map.of()));
                exchanges.add(exchange(retryExchange, "fanout", Map.of()));
                String destinationType;
                if (channel.partitions() > 0) {
                    destinationType = "exchange";
                    exchanges.add(exchange(channel.queue(), "x-consistent-hash", Map.of("hash-header", MessageHeaders.AGGREGATE_ID)));
                    for (int partition = 0; partition < channel.partitions(); partition++) {
                        queues.add(queue(channel.queue() + "." + partition, Topology.consumerPartitionArguments(deadLetterExchange)));
                        bindings.add(binding(channel.queue(), channel.queue() + "." + partition, "queue", "1"));
                    }
                } else {
                    destinationType = "queue";
                    queues.add(queue(channel.queue(), Topology.consumerQueueArguments(deadLetterExchange)));
                }
                for (String event : channel.events()) {
                    bindings.add(binding(channel.exchange(), channel.queue(), destinationType, event));
                }
                queues.add(queue(channel.deadLetterQueue(), Topology.deadLetterQueueArguments()));
                bindings.add(binding(deadLetterExchange, channel.deadLetterQueue(), "queue", ""));
                bindings.add(binding(retryExchange, channel.queue(), destinationType, ""));
            }
        }
        return "{\n  \"vhosts\": [\n    {\"name\":\"/\"}\n  ],\n"
                + section("exchanges", exchanges) + ",\n" + section("queues", queues) + ",\n" + section("bindings", bindings) + "\n}\n";
    }

    private static String section(String name, List<Map<String, Object>> entries) {
        return "  \"" + name + "\": [\n" + entries.stream().map(entry -> {
            try {
                return "    " + JSON.writeValueAsString(entry);
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }).collect(Collectors.joining(",\n")) + "\n  ]";
    }

    private static Map<String, Object> exchange(String name, String type, Map<String, Object> arguments) {
        Map<String, Object> exchange = new LinkedHashMap<>();
        exchange.put("name", name);
        exchange.put("vhost", "/");
        exchange.put("type", type);
        exchange.put("durable", true);
        exchange.put("auto_delete", false);
        exchange.put("internal", false);
        exchange.put("arguments", new TreeMap<>(arguments));
        return exchange;
    }

    private static Map<String, Object> queue(String name, Map<String, Object> arguments) {
        Map<String, Object> queue = new LinkedHashMap<>();
        queue.put("name", name);
        queue.put("vhost", "/");
        queue.put("durable", true);
        queue.put("auto_delete", false);
        queue.put("arguments", new TreeMap<>(arguments));
        return queue;
    }

    private static Map<String, Object> binding(String source, String destination, String destinationType, String routingKey) {
        Map<String, Object> binding = new LinkedHashMap<>();
        binding.put("source", source);
        binding.put("vhost", "/");
        binding.put("destination", destination);
        binding.put("destination_type", destinationType);
        binding.put("routing_key", routingKey);
        binding.put("arguments", Map.of());
        return binding;
    }

    // --- Prometheus ---------------------------------------------------------------------------------

    String prometheus() {
        StringBuilder out = new StringBuilder("""
                # Prometheus for `docker compose --profile observability up`: scrapes each service's /q/metrics, as the
                # monitor (deploy/OPERATIONS.md, "Operations"; docker-compose.yml writes its password to the file from MONITOR_PASSWORD).
                # The job names are the services' names; the dashboard (grafana/dashboards/pipeline.json) reads them.
                """).append("# ").append(GENERATED).append("\n").append("""
                global:
                  scrape_interval: 5s
                  evaluation_interval: 5s

                scrape_configs:
                """);
        for (Deployable deployable : catalog.deployables()) {
            out.append("  - job_name: ").append(deployable.name()).append('\n')
                    .append("    metrics_path: /q/metrics\n")
                    .append("    basic_auth: {username: monitor, password_file: /prometheus/monitor-password}\n")
                    .append("    static_configs:\n")
                    .append("      - targets: [\"").append(deployable.name()).append(':').append(deployable.port()).append("\"]\n");
        }
        return out.toString();
    }

    // --- text ---------------------------------------------------------------------------------------

    /** A comment, wrapped at 110 columns, each line with the indent; nothing for null. */
    static void comment(StringBuilder out, String indent, String text) {
        if (text == null || text.isBlank()) {
            return;
        }
        StringBuilder line = new StringBuilder(indent).append('#');
        for (String word : text.strip().split("\\s+")) {
            if (line.length() + 1 + word.length() > 110 && line.length() > indent.length() + 1) {
                out.append(line).append('\n');
                line = new StringBuilder(indent).append('#');
            }
            line.append(' ').append(word);
        }
        out.append(line).append('\n');
    }

    /** A YAML scalar: plain where that reads as the same string, double-quoted otherwise. */
    static String yaml(String value) {
        if (PLAIN_YAML.matcher(value).matches() && !YAML_KEYWORD.matcher(value).matches() && !value.endsWith(" ")) {
            return value;
        }
        return quoted(value);
    }

    static String quoted(String value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    static String template(String name) {
        try (InputStream in = Forms.class.getResourceAsStream("/templates/" + name)) {
            if (in == null) {
                throw new IllegalStateException("no template " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String fill(String template, Map<String, String> values) {
        String filled = template;
        for (Map.Entry<String, String> value : values.entrySet()) {
            String placeholder = "{{" + value.getKey() + "}}";
            if (!filled.contains(placeholder)) {
                throw new IllegalStateException("the template has no " + placeholder);
            }
            filled = filled.replace(placeholder, value.getValue());
        }
        if (filled.contains("{{")) {
            throw new IllegalStateException("a placeholder left unfilled: " + filled.substring(filled.indexOf("{{"), filled.indexOf("{{") + 40));
        }
        return filled;
    }
}
