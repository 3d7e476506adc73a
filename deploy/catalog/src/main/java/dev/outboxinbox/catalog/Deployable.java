package dev.outboxinbox.catalog;

import dev.outboxinbox.catalog.Catalog.Service;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One process the catalog deploys: a service, or the relay instance of a producing service. Its
 * environment is written once, here, with placeholders for what differs between the deployment
 * forms (where PostgreSQL, RabbitMQ, the trace collector and the other services are; how a password
 * is passed), and each form fills them in its own way ({@link Form}).
 */
public record Deployable(String name, String module, int port, boolean relay, String about, List<Variable> environment,
        int replicas, String cpu, boolean partitioned) {

    /** {url:order-service}: that deployable's HTTP address, as the form reaches it. */
    static final Pattern URL = Pattern.compile("\\{url:([a-z0-9-]+)}");
    static final String PUBLICATION = "outbox_publication";
    private static final String TRACES = "Traces go to the trace collector, when OTEL_SDK_DISABLED=false (deploy/OPERATIONS.md, \"Watch it\").";
    private static final String DOOR = "The operations endpoints' and /q/metrics' door (deploy/OPERATIONS.md, \"Operations\"): operator and monitor.";

    /** An environment variable: a value (with placeholders), a password from .env, a setting from .env, or the pod's name. */
    public record Variable(String name, Kind kind, String value, String kubernetesValue, String comment) {

        public enum Kind { VALUE, SECRET, SETTING, POD_NAME }

        static Variable value(String name, Object value) {
            return new Variable(name, Kind.VALUE, String.valueOf(value), null, null);
        }

        static Variable secret(String name, String variable) {
            return new Variable(name, Kind.SECRET, variable, null, null);
        }

        Variable withComment(String text) {
            return new Variable(name, kind, value, kubernetesValue, text);
        }
    }

    static Deployable of(Catalog catalog, Service service) {
        List<Variable> environment = new ArrayList<>();
        environment.add(Variable.value("QUARKUS_HTTP_PORT", service.port()));
        environment.add(Variable.value("QUARKUS_DATASOURCE_JDBC_URL", "jdbc:postgresql://{postgres-host}:{postgres-port}/" + service.database()));
        environment.add(Variable.value("QUARKUS_DATASOURCE_USERNAME", service.role()));
        environment.add(Variable.secret("QUARKUS_DATASOURCE_PASSWORD", service.dbPassword()));
        environment.add(Variable.value("RABBITMQ_HOST", "{rabbitmq-host}"));
        environment.add(Variable.value("RABBITMQ_PORT", "{rabbitmq-port}"));
        environment.add(Variable.value("RABBITMQ_VIRTUAL_HOST", "/"));
        environment.add(Variable.value("RABBITMQ_USERNAME", service.role()));
        environment.add(Variable.secret("RABBITMQ_PASSWORD", service.brokerPassword()));
        common(environment);
        Map<String, String> inKubernetes = service.kubernetes().environment();
        service.environment().forEach((name, value) -> environment.add(
                new Variable(name, Variable.Kind.VALUE, value, inKubernetes.get(name), null)));
        boolean partitioned = service.consumes().stream().anyMatch(c -> c.partitions() > 0);
        if (partitioned) {
            environment.add(new Variable("INBOX_PARTITIONING_INSTANCE", Variable.Kind.POD_NAME, null, null,
                    "Its name among the instances that share the partitions (the pod's name: unique)."));
        }
        return new Deployable(service.name(), service.module(), service.port(), false, service.about(), List.copyOf(environment),
                service.kubernetes().replicas(), service.kubernetes().cpu(), partitioned);
    }

    static Deployable relayOf(Catalog catalog, Service producer) {
        Catalog.Relay relay = catalog.relay();
        Catalog.RelayInstance instance = producer.produces().relay();
        boolean first = instance.name().equals(relay.module());
        List<Variable> environment = new ArrayList<>();
        environment.add(Variable.value("QUARKUS_HTTP_PORT", instance.port()));
        environment.add(Variable.value("RELAY_SOURCE_HOST", "{postgres-host}"));
        environment.add(Variable.value("RELAY_SOURCE_PORT", "{postgres-port}"));
        environment.add(Variable.value("RELAY_SOURCE_DATABASE", producer.database()));
        environment.add(Variable.value("RELAY_SOURCE_USER", relay.role()));
        environment.add(Variable.secret("RELAY_SOURCE_PASSWORD", relay.dbPassword()));
        environment.add(Variable.value("RELAY_SOURCE_SLOT", instance.slot()));
        environment.add(Variable.value("RELAY_SOURCE_PUBLICATION", PUBLICATION));
        environment.add(Variable.value("RELAY_OFFSETS_JDBC_URL", "jdbc:postgresql://{postgres-host}:{postgres-port}/" + relay.database()));
        environment.add(Variable.value("RELAY_OFFSETS_USER", relay.role()));
        environment.add(Variable.secret("RELAY_OFFSETS_PASSWORD", relay.dbPassword()));
        if (!first) {
            // Each instance keeps its offsets in a table of its own; the first keeps the default.
            environment.add(Variable.value("RELAY_OFFSETS_TABLE", offsetsTable(instance.name(), relay.module())));
        }
        environment.add(Variable.value("RELAY_BROKER_HOST", "{rabbitmq-host}"));
        environment.add(Variable.value("RELAY_BROKER_PORT", "{rabbitmq-port}"));
        environment.add(Variable.value("RELAY_BROKER_VIRTUAL_HOST", "/"));
        environment.add(Variable.value("RELAY_BROKER_USER", relay.role()));
        environment.add(Variable.secret("RELAY_BROKER_PASSWORD", relay.brokerPassword()));
        common(environment);
        if (!first) {
            environment.add(Variable.value("OTEL_SERVICE_NAME", instance.name()));
        }
        environment.add(new Variable("RELAY_LEADERSHIP_INSTANCE", Variable.Kind.POD_NAME, null, null,
                "Its name in the election (the pod's name): the lock session's application_name, the standby's health."));
        String about = "the relay of " + producer.name() + "'s outbox (to the exchange " + producer.produces().exchange() + "): "
                + relay.about();
        return new Deployable(instance.name(), relay.module(), instance.port(), true, about, List.copyOf(environment),
                2, instance.cpu(), false);
    }

    /** outbox-relay-inventory → relay_offsets_inventory. */
    static String offsetsTable(String instance, String module) {
        return "relay_offsets_" + instance.substring(module.length() + 1).replace('-', '_');
    }

    private static void common(List<Variable> environment) {
        environment.add(new Variable("OTEL_SDK_DISABLED", Variable.Kind.SETTING, "OTEL_SDK_DISABLED", "true", TRACES));
        environment.add(Variable.value("OTEL_EXPORTER_OTLP_ENDPOINT", "{otlp-endpoint}"));
        environment.add(Variable.secret("OPERATOR_PASSWORD", "OPERATOR_PASSWORD").withComment(DOOR));
        environment.add(Variable.secret("MONITOR_PASSWORD", "MONITOR_PASSWORD"));
    }

    /** Where a deployment form runs the system: the values of the placeholders, and how it reaches a service. */
    public enum Form {
        LOCAL("${POSTGRES_HOST}", "${POSTGRES_PORT}", "${RABBITMQ_HOST}", "${RABBITMQ_PORT}", "http://127.0.0.1:4317", "127.0.0.1"),
        COMPOSE("postgres", "5432", "rabbitmq", "5672", "http://jaeger:4317", null),
        KUBERNETES("postgres-rw", "5432", "rabbitmq", "5672", "http://jaeger:4317", null);

        private final Map<String, String> placeholders;
        private final String host;

        Form(String postgresHost, String postgresPort, String rabbitmqHost, String rabbitmqPort, String otlp, String host) {
            this.placeholders = Map.of("{postgres-host}", postgresHost, "{postgres-port}", postgresPort,
                    "{rabbitmq-host}", rabbitmqHost, "{rabbitmq-port}", rabbitmqPort, "{otlp-endpoint}", otlp);
            this.host = host;
        }

        /** A value with this form's hosts and ports. */
        public String fill(String value, Catalog catalog) {
            String filled = value;
            for (Map.Entry<String, String> placeholder : placeholders.entrySet()) {
                filled = filled.replace(placeholder.getKey(), placeholder.getValue());
            }
            Matcher url = URL.matcher(filled);
            StringBuilder out = new StringBuilder();
            while (url.find()) {
                Deployable target = catalog.deployable(url.group(1));
                url.appendReplacement(out, Matcher.quoteReplacement(
                        "http://" + (host != null ? host : target.name()) + ":" + target.port()));
            }
            return url.appendTail(out).toString();
        }
    }

    /** The variables of this form, in order, each with its value as the form writes it (POD_NAME: Kubernetes only). */
    public List<Variable> environment(Form form) {
        return environment.stream().filter(v -> form == Form.KUBERNETES || v.kind() != Variable.Kind.POD_NAME).toList();
    }
}
