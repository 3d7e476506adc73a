package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import dev.outboxinbox.testing.RealServices;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * docker-compose.yml and deploy/local run the same system: the same services, on the same ports,
 * with the same variables and values (the hosts aside: postgres and rabbitmq in compose,
 * ${POSTGRES_HOST} and ${RABBITMQ_HOST} locally). Both are made from deploy/catalog.yaml (the catalog
 * module's test keeps them equal to what it makes); this reads the files as compose and the local
 * runner do, so a generator that wrote them apart fails here.
 */
class ComposeMatchesLocalRunnerTest {

    private static final Path ROOT = Path.of(System.getProperty("repository.root", "../.."));
    private static final Pattern ASSIGNMENT = Pattern.compile("^([A-Z_][A-Z0-9_]*)=(.*)$");
    /** How docker-compose.yml takes a credential: required, with a message that names it. */
    private static final Pattern REQUIRED = Pattern.compile("\\$\\{([A-Z_][A-Z0-9_]*):\\?\\1 is not set \\(see \\.env\\)}");
    /**
     * How a local value reads once its host and port variables are replaced by compose's names: the
     * infrastructure's, and each service's address (http://127.0.0.1:8082 is http://inventory-service:8082).
     */
    private static final Map<String, String> LOCAL_TO_COMPOSE = localToCompose();

    private static Map<String, String> localToCompose() {
        Map<String, String> names = new java.util.HashMap<>(Map.of(
                "${POSTGRES_HOST}", "postgres", "${POSTGRES_PORT}", "5432",
                "${RABBITMQ_HOST}", "rabbitmq", "${RABBITMQ_PORT}", "5672",
                "http://127.0.0.1:4317", "http://jaeger:4317"));
        try {
            for (String service : localServices()) {
                String port = rawLocalEnvironment(service).get("QUARKUS_HTTP_PORT");
                names.put("http://127.0.0.1:" + port, "http://" + service + ":" + port);
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return Map.copyOf(names);
    }

    @Test
    void theSameServicesRunInBoth() throws IOException {
        assertThat(composeApplicationServices().keySet()).isEqualTo(localServices());
    }

    @Test
    void eachServiceHasTheSameVariablesAndValues() throws IOException {
        Map<String, Map<String, Object>> compose = composeApplicationServices();
        for (String service : localServices()) {
            Map<String, String> inCompose = new TreeMap<>();
            // ${X:?X is not set (see .env)} in compose is ${X} in an env file: the same value, required.
            asMap(compose.get(service).get("environment")).forEach((k, v) -> inCompose.put(k,
                    REQUIRED.matcher(String.valueOf(v)).replaceAll("\\${$1}")));
            assertThat(inCompose).as("environment of %s in docker-compose.yml vs deploy/local/services/%s.env", service, service)
                    .isEqualTo(localEnvironment(service));
        }
    }

    @Test
    void eachServiceIsPublishedOnThePortItListensOn() throws IOException {
        Map<String, Map<String, Object>> compose = composeApplicationServices();
        for (String service : localServices()) {
            String port = localEnvironment(service).get("QUARKUS_HTTP_PORT");
            assertThat(port).as("%s's port in deploy/local", service).isNotBlank();
            List<String> ports = ((List<?>) compose.get(service).get("ports")).stream().map(String::valueOf).toList();
            assertThat(ports).as("%s's ports in docker-compose.yml: the host side configurable, by default the same", service)
                    .singleElement().asString().matches("\\$\\{[A-Z_]+_HOST_PORT:-" + port + "}:" + port);
        }
        List<String> ports = new java.util.ArrayList<>();
        for (String service : localServices()) {
            ports.add(localEnvironment(service).get("QUARKUS_HTTP_PORT"));
        }
        assertThat(ports).as("the local runner's ports: one per service").doesNotHaveDuplicates().hasSize(localServices().size());
    }

    /** A slot that nobody reads may keep only so much WAL, in both: the same bound, set in both places. */
    @Test
    void postgresBoundsTheWalASlotMayKeepTheSameWayInBoth() throws IOException {
        Matcher compose = Pattern.compile("\"max_slot_wal_keep_size=([^\"]+)\"")
                .matcher(Files.readString(ROOT.resolve("docker-compose.yml")));
        Matcher local = Pattern.compile("(?m)^max_slot_wal_keep_size=(\\S+)$")
                .matcher(Files.readString(ROOT.resolve("deploy/local/prepare-services")));
        assertThat(compose.find()).as("docker-compose.yml sets max_slot_wal_keep_size").isTrue();
        assertThat(local.find()).as("deploy/local/prepare-services sets max_slot_wal_keep_size").isTrue();
        assertThat(local.group(1)).isEqualTo(compose.group(1));
    }

    @Test
    void everyCredentialComesFromTheEnvFileAndExistsThere() throws IOException {
        Set<String> defined = Files.readAllLines(ROOT.resolve(".env")).stream()
                .map(ASSIGNMENT::matcher).filter(Matcher::matches).map(m -> m.group(1)).collect(Collectors.toSet());
        Pattern reference = Pattern.compile("\\$\\{([A-Z_][A-Z0-9_]*)}");
        Matcher used = REQUIRED.matcher(Files.readString(ROOT.resolve("docker-compose.yml")));
        while (used.find()) {
            assertThat(defined).as("docker-compose.yml requires ${%s}: .env must define it", used.group(1)).contains(used.group(1));
        }
        for (String service : localServices()) {
            for (String value : localEnvironment(service).values()) {
                Matcher inLocal = reference.matcher(value);
                while (inLocal.find()) {
                    assertThat(defined).as("deploy/local/services/%s.env uses ${%s}", service, inLocal.group(1))
                            .contains(inLocal.group(1));
                }
            }
        }
        Map<String, Map<String, Object>> compose = composeApplicationServices();
        compose.forEach((service, definition) -> asMap(definition.get("environment")).forEach((key, value) -> {
            if (key.endsWith("PASSWORD")) {
                assertThat(String.valueOf(value)).as("%s of %s comes from .env, required", key, service).matches(REQUIRED);
            }
        }));
    }

    /**
     * No variable of docker-compose.yml can silently be blank: each is required (compose stops and names
     * it) or has a default (the host ports). A bare ${X} would start a service with an empty password.
     */
    @Test
    void everyVariableOfComposeIsRequiredOrHasADefault() throws IOException {
        String withoutComments = Files.readAllLines(ROOT.resolve("docker-compose.yml")).stream()
                .filter(line -> !line.strip().startsWith("#")).collect(Collectors.joining("\n"));
        Matcher variable = Pattern.compile("\\$\\{[^}]*}").matcher(withoutComments);
        int count = 0;
        while (variable.find()) {
            count++;
            assertThat(variable.group()).as("a variable of docker-compose.yml")
                    .matches(REQUIRED.pattern() + "|\\$\\{[A-Z_]+_HOST_PORT:-[0-9]+}");
        }
        assertThat(count).as("variables in docker-compose.yml").isGreaterThan(10);
    }

    /**
     * The observability profile sees the same system: Prometheus scrapes every application service on
     * the port it listens on, Grafana's data sources are services of the profile, and every service
     * exports its traces to the profile's collector.
     */
    @Test
    @SuppressWarnings("unchecked")
    void theObservabilityProfileScrapesEveryServiceAndCollectsItsTraces() throws IOException {
        Map<String, Object> prometheus;
        try (Reader reader = Files.newBufferedReader(ROOT.resolve("deploy/observability/prometheus.yml"))) {
            prometheus = new Yaml().load(reader);
        }
        Map<String, String> scraped = new TreeMap<>();
        for (Map<String, Object> job : (List<Map<String, Object>>) prometheus.get("scrape_configs")) {
            assertThat(job.get("metrics_path")).as("job %s", job.get("job_name")).isEqualTo("/q/metrics");
            List<String> targets = (List<String>) ((List<Map<String, Object>>) job.get("static_configs")).get(0).get("targets");
            scraped.put(String.valueOf(job.get("job_name")), String.join(",", targets));
        }
        Map<String, String> expected = new TreeMap<>();
        for (String service : localServices()) {
            expected.put(service, service + ":" + localEnvironment(service).get("QUARKUS_HTTP_PORT"));
        }
        assertThat(scraped).as("Prometheus's jobs: one per service, at its port").isEqualTo(expected);

        Map<String, Object> compose;
        try (Reader reader = Files.newBufferedReader(ROOT.resolve("docker-compose.yml"))) {
            compose = new Yaml().load(reader);
        }
        Map<String, Map<String, Object>> services = (Map<String, Map<String, Object>>) compose.get("services");
        for (String profiled : List.of("prometheus", "jaeger", "grafana")) {
            assertThat(services.get(profiled)).as(profiled).containsEntry("profiles", List.of("observability"));
        }
        String datasources = Files.readString(ROOT.resolve("deploy/observability/grafana/provisioning/datasources/datasources.yml"));
        assertThat(datasources).contains("url: http://prometheus:9090", "url: http://jaeger:16686");
        composeApplicationServices().forEach((service, definition) -> assertThat(asMap(definition.get("environment")))
                .as("%s exports its traces to the profile's collector", service)
                .containsEntry("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"));
    }

    @Test
    @SuppressWarnings("unchecked")
    void theBrokerHasTheSamePluginsInComposeLocallyAndInTestcontainers() throws IOException {
        String plugins = Files.readString(ROOT.resolve("deploy/rabbitmq/enabled_plugins"));
        assertThat(plugins).contains("rabbitmq_consistent_hash_exchange").isEqualTo(RealServices.RABBITMQ_ENABLED_PLUGINS);
        Map<String, Object> compose;
        try (Reader reader = Files.newBufferedReader(ROOT.resolve("docker-compose.yml"))) {
            compose = new Yaml().load(reader);
        }
        Map<String, Object> rabbitmq = ((Map<String, Map<String, Object>>) compose.get("services")).get("rabbitmq");
        assertThat((List<String>) rabbitmq.get("volumes"))
                .contains("./deploy/rabbitmq/enabled_plugins:/etc/rabbitmq/enabled_plugins:ro");
        assertThat(Files.readString(ROOT.resolve("deploy/local/prepare-services")))
                .contains("deploy/rabbitmq/enabled_plugins");
    }

    /** The services compose builds from this repository's Dockerfile: the application services. */
    @SuppressWarnings("unchecked")
    private static Map<String, Map<String, Object>> composeApplicationServices() throws IOException {
        Map<String, Object> file;
        try (Reader reader = Files.newBufferedReader(ROOT.resolve("docker-compose.yml"))) {
            file = new Yaml().load(reader);
        }
        Map<String, Map<String, Object>> services = new TreeMap<>();
        ((Map<String, Object>) file.get("services")).forEach((name, definition) -> {
            Map<String, Object> service = (Map<String, Object>) definition;
            if (service.containsKey("build")) {
                services.put(name, service);
            }
        });
        return services;
    }

    private static Set<String> localServices() throws IOException {
        try (Stream<Path> files = Files.list(ROOT.resolve("deploy/local/services"))) {
            return files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".env"))
                    .map(n -> n.substring(0, n.length() - ".env".length())).collect(Collectors.toCollection(java.util.TreeSet::new));
        }
    }

    private static Map<String, String> localEnvironment(String service) throws IOException {
        Map<String, String> environment = new TreeMap<>();
        rawLocalEnvironment(service).forEach((variable, raw) -> {
            String value = raw;
            for (Map.Entry<String, String> host : LOCAL_TO_COMPOSE.entrySet()) {
                value = value.replace(host.getKey(), host.getValue());
            }
            environment.put(variable, value);
        });
        return environment;
    }

    /** A service's env file as deploy/local reads it. */
    private static Map<String, String> rawLocalEnvironment(String service) throws IOException {
        Map<String, String> environment = new TreeMap<>();
        for (String line : Files.readAllLines(ROOT.resolve("deploy/local/services/" + service + ".env"))) {
            Matcher assignment = ASSIGNMENT.matcher(line.trim());
            if (assignment.matches()) {
                environment.put(assignment.group(1), assignment.group(2));
            }
        }
        return environment;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object environment) {
        return environment == null ? Map.of() : (Map<String, Object>) environment;
    }
}
