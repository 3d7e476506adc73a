package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.catalog.Catalog;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.Reader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * deploy/kubernetes, validated offline: every document is bound to the Kubernetes API model of fabric8
 * (the API's own types, generated from its OpenAPI schema) and any field the model does not have is an
 * error, at any depth: a misspelt {@code readinesProbe} or a {@code containerPort} one level too high
 * would otherwise be dropped by the API server without a word. The kustomization is rendered with
 * {@code kubectl kustomize} and the rendered output bound the same way (.ci/run requires kubectl;
 * without it, as on a laptop that has none, the sources alone are bound and the test says so). The
 * operators' resources (RabbitmqCluster, CloudNativePG's Cluster) have no model here: their fields are
 * held to the operators' API references. Then what the system needs of the manifests: the environment
 * compose gives each service, probes, limits, disruption budgets, a leader and a standby per relay.
 */
class KubernetesManifestsTest {

    private static final Path ROOT = Path.of(System.getProperty("repository.root", "../.."));
    private static final Path MANIFESTS = ROOT.resolve("deploy/kubernetes");
    private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();
    /** Variables only Kubernetes sets: each instance's name in its election or share-out, the pod's name. */
    private static final Set<String> KUBERNETES_ONLY = Set.of("INBOX_PARTITIONING_INSTANCE", "RELAY_LEADERSHIP_INSTANCE");
    /**
     * The fields of RabbitmqCluster's spec (rabbitmq.com/v1beta1, the cluster operator's API reference,
     * github.com/rabbitmq/cluster-operator/wiki/API_Reference) and of CloudNativePG's Cluster spec
     * (postgresql.cnpg.io/v1, cloudnative-pg.io/docs, "API Reference") that these manifests may use.
     */
    private static final Set<String> RABBITMQ_CLUSTER_SPEC = Set.of("replicas", "image", "imagePullSecrets", "service",
            "persistence", "resources", "affinity", "tolerations", "rabbitmq", "tls", "override", "skipPostDeploySteps",
            "terminationGracePeriodSeconds", "delayStartSeconds", "secretBackend");
    private static final Set<String> RABBITMQ_CLUSTER_RABBITMQ = Set.of("additionalPlugins", "additionalConfig",
            "advancedConfig", "envConfig", "erlangInetConfig");
    private static final Set<String> CNPG_CLUSTER_SPEC = Set.of("instances", "imageName", "imageCatalogRef",
            "primaryUpdateStrategy", "primaryUpdateMethod", "minSyncReplicas", "maxSyncReplicas", "enableSuperuserAccess",
            "superuserSecret", "postgresql", "replicationSlots", "storage", "walStorage", "resources", "affinity",
            "bootstrap", "backup", "monitoring", "managed", "description", "inheritedMetadata", "startDelay", "stopDelay");

    @Test
    void everySourceManifestBindsStrictlyToTheKubernetesModel() throws IOException {
        List<String> documents = new ArrayList<>();
        for (Path file : manifestFiles()) {
            documents.addAll(documents(Files.readString(file)));
        }
        List<String> problems = problemsOf(documents);
        System.out.printf("[kubernetes] sources: %d documents in %d files bound to the Kubernetes model: %s; %d problems%n",
                documents.size(), manifestFiles().size(), kinds(documents), problems.size());
        assertThat(problems).isEmpty();
    }

    @Test
    void theKustomizationRendersEverySourceAndTheRenderedManifestsBindStrictly() throws Exception {
        Map<String, Object> kustomization = yaml(MANIFESTS.resolve("kustomization.yaml"));
        assertThat(kustomization.get("resources")).as("kustomization.yaml lists every manifest of the directory")
                .isEqualTo(manifestFiles().stream().map(f -> f.getFileName().toString()).toList());
        List<String> rendered = render();
        if (rendered == null) {
            assertThat(System.getenv("KUBERNETES_RENDER_REQUIRED")).as("kubectl is required to render the kustomization").isNull();
            System.out.println("[kubernetes] kubectl not found: the kustomization was not rendered, the sources alone were bound");
            return;
        }
        List<String> problems = problemsOf(rendered);
        System.out.printf("[kubernetes] rendered (kubectl kustomize): %d documents: %s; %d problems%n", rendered.size(),
                kinds(rendered), problems.size());
        assertThat(problems).isEmpty();
        assertThat(rendered).allSatisfy(document -> assertThat(bind(document).getMetadata().getNamespace())
                .isIn("outbox-inbox", null));
        assertThat(kinds(rendered)).containsEntry("ConfigMap", 2L)
                .containsEntry("Deployment", (long) Catalog.load(ROOT).deployables().size());
    }

    @Test
    void eachServiceGetsTheEnvironmentComposeGivesIt() throws IOException {
        Map<String, Object> compose = yaml(ROOT.resolve("docker-compose.yml"));
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> services = (Map<String, Map<String, Object>>) compose.get("services");
        List<Deployment> deployments = all(Deployment.class);
        assertThat(deployments).extracting(d -> d.getMetadata().getName())
                .containsExactlyInAnyOrderElementsOf(services.entrySet().stream().filter(e -> e.getValue().containsKey("build"))
                        .map(Map.Entry::getKey).toList());
        for (Deployment deployment : deployments) {
            String name = deployment.getMetadata().getName();
            @SuppressWarnings("unchecked")
            Set<String> inCompose = new TreeSet<>(((Map<String, Object>) services.get(name).get("environment")).keySet());
            Set<String> inKubernetes = container(deployment).getEnv().stream().map(EnvVar::getName)
                    .filter(variable -> !KUBERNETES_ONLY.contains(variable)).collect(Collectors.toCollection(TreeSet::new));
            assertThat(inKubernetes).as("%s's variables in Kubernetes and in compose", name).isEqualTo(inCompose);
            for (EnvVar variable : container(deployment).getEnv()) {
                if (variable.getName().endsWith("PASSWORD")) {
                    assertThat(variable.getValue()).as("%s's %s comes from a Secret", name, variable.getName()).isNull();
                    assertThat(variable.getValueFrom().getSecretKeyRef().getName()).isEqualTo("outbox-inbox-credentials");
                }
            }
        }
    }

    @Test
    void everyServiceHasProbesLimitsAServiceAndADisruptionBudget() throws IOException {
        List<Service> services = all(Service.class);
        List<PodDisruptionBudget> budgets = all(PodDisruptionBudget.class);
        for (Deployment deployment : all(Deployment.class)) {
            String name = deployment.getMetadata().getName();
            Map<String, String> labels = deployment.getSpec().getTemplate().getMetadata().getLabels();
            assertThat(labels).containsAllEntriesOf(deployment.getSpec().getSelector().getMatchLabels());
            Container container = container(deployment);
            int port = container.getPorts().get(0).getContainerPort();
            assertThat(env(container, "QUARKUS_HTTP_PORT")).isEqualTo(String.valueOf(port));
            assertThat(container.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/q/health/ready");
            assertThat(container.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/q/health/live");
            assertThat(container.getStartupProbe().getHttpGet().getPath()).isEqualTo("/q/health/started");
            assertThat(container.getResources().getLimits()).as("%s's memory limit", name).containsKey("memory");
            assertThat(container.getResources().getRequests()).as("%s's requests", name).containsKeys("cpu", "memory");
            assertThat(container.getImage()).startsWith("outbox-inbox/");
            assertThat(services).as("a Service for %s on its port", name).anySatisfy(service -> {
                assertThat(service.getSpec().getSelector()).isEqualTo(deployment.getSpec().getSelector().getMatchLabels());
                assertThat(service.getSpec().getPorts().get(0).getPort()).isEqualTo(port);
            });
            assertThat(budgets).as("a PodDisruptionBudget for %s", name).anySatisfy(budget -> {
                assertThat(budget.getSpec().getSelector().getMatchLabels()).isEqualTo(deployment.getSpec().getSelector().getMatchLabels());
                IntOrString minAvailable = budget.getSpec().getMinAvailable();
                assertThat(minAvailable == null ? 1 : deployment.getSpec().getReplicas() - minAvailable.getIntVal()).isPositive();
            });
            assertThat(deployment.getSpec().getReplicas()).as("%s: a drain never takes every instance", name).isGreaterThanOrEqualTo(2);
        }
    }

    @Test
    void eachRelayIsALeaderAndAStandbyAndAPartitionedConsumerSplitsItsPartitionsEvenly() throws IOException {
        Catalog catalog = Catalog.load(ROOT);
        for (Deployment deployment : all(Deployment.class)) {
            String name = deployment.getMetadata().getName();
            Container container = container(deployment);
            if (catalog.deployable(name).relay()) {
                assertThat(deployment.getSpec().getReplicas()).as("%s: a leader and its standby", name).isEqualTo(2);
                assertThat(deployment.getSpec().getStrategy().getRollingUpdate().getMaxSurge().getIntVal())
                        .as("%s: a rollout never adds a third", name).isZero();
                assertThat(podName(container, "RELAY_LEADERSHIP_INSTANCE")).isTrue();
            }
            for (Catalog.Service service : catalog.services()) {
                for (Catalog.Channel channel : service.consumes()) {
                    if (service.name().equals(name) && channel.partitions() > 0) {
                        assertThat(channel.partitions() % deployment.getSpec().getReplicas()).as("%s: partitions per replica", name).isZero();
                        assertThat(podName(container, "INBOX_PARTITIONING_INSTANCE")).isTrue();
                    }
                }
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void theBrokerAndTheDatabaseAreReplicatedWithWhatTheSystemNeeds() throws IOException {
        GenericKubernetesResource rabbitmq = operatorResource("rabbitmq.com/v1beta1", "RabbitmqCluster");
        Map<String, Object> spec = (Map<String, Object>) rabbitmq.getAdditionalProperties().get("spec");
        assertThat(spec.keySet()).isSubsetOf(RABBITMQ_CLUSTER_SPEC);
        assertThat(((Map<String, Object>) spec.get("rabbitmq")).keySet()).isSubsetOf(RABBITMQ_CLUSTER_RABBITMQ);
        assertThat(spec).containsEntry("replicas", 3);
        assertThat((List<String>) ((Map<String, Object>) spec.get("rabbitmq")).get("additionalPlugins"))
                .contains("rabbitmq_consistent_hash_exchange");
        assertThat(rabbitmq.getMetadata().getName()).as("the host the services connect to").isEqualTo("rabbitmq");

        GenericKubernetesResource postgres = operatorResource("postgresql.cnpg.io/v1", "Cluster");
        Map<String, Object> cluster = (Map<String, Object>) postgres.getAdditionalProperties().get("spec");
        assertThat(cluster.keySet()).isSubsetOf(CNPG_CLUSTER_SPEC);
        assertThat(cluster).containsEntry("instances", 3).containsEntry("minSyncReplicas", 1);
        Map<String, Object> parameters = (Map<String, Object>) ((Map<String, Object>) cluster.get("postgresql")).get("parameters");
        assertThat(parameters).containsEntry("wal_level", "logical")
                .containsEntry("max_slot_wal_keep_size", composePostgresSetting("max_slot_wal_keep_size"));
        for (Deployment deployment : all(Deployment.class)) {
            container(deployment).getEnv().stream().map(EnvVar::getValue).filter(v -> v != null && v.contains("postgres"))
                    .forEach(value -> assertThat(value).as("connects to the primary's Service").contains("postgres-rw"));
        }
    }

    // --- binding ---

    private static List<String> problemsOf(List<String> documents) {
        List<String> problems = new ArrayList<>();
        for (String document : documents) {
            HasMetadata resource;
            try {
                resource = bind(document);
            } catch (RuntimeException e) {
                problems.add("does not bind: " + e.getMessage() + "\n" + document);
                continue;
            }
            String name = resource.getKind() + "/" + resource.getMetadata().getName();
            if (resource instanceof GenericKubernetesResource generic) {
                if (!Set.of("rabbitmq.com/v1beta1", "postgresql.cnpg.io/v1").contains(generic.getApiVersion())) {
                    problems.add(name + ": no model for " + generic.getApiVersion() + " (a misspelt apiVersion or kind?)");
                }
                continue;
            }
            unknownFields(resource, name, problems);
        }
        return problems;
    }

    private static HasMetadata bind(String document) {
        KubernetesResource resource = SERIALIZATION.unmarshal(document, KubernetesResource.class);
        if (!(resource instanceof HasMetadata hasMetadata)) {
            throw new IllegalArgumentException("not a Kubernetes object: " + resource);
        }
        return hasMetadata;
    }

    /** Every field the model did not know lands in an additionalProperties map: each one found is a problem. */
    private static void unknownFields(Object node, String path, List<String> problems) {
        if (node == null || node instanceof String || node instanceof Number || node instanceof Boolean || node instanceof Enum<?>) {
            return;
        }
        if (node instanceof Collection<?> items) {
            int i = 0;
            for (Object item : items) {
                unknownFields(item, path + "[" + i++ + "]", problems);
            }
            return;
        }
        if (node instanceof Map<?, ?> map) {
            map.forEach((key, value) -> unknownFields(value, path + "." + key, problems));
            return;
        }
        if (!node.getClass().getPackageName().startsWith("io.fabric8.kubernetes.api.model")) {
            return;
        }
        for (Method getter : node.getClass().getMethods()) {
            if (getter.getParameterCount() != 0 || Modifier.isStatic(getter.getModifiers()) || getter.getDeclaringClass() == Object.class
                    || !(getter.getName().startsWith("get") || getter.getName().startsWith("is"))) {
                continue;
            }
            Object value;
            try {
                value = getter.invoke(node);
            } catch (IllegalAccessException | InvocationTargetException e) {
                continue;
            }
            if (getter.getName().equals("getAdditionalProperties")) {
                if (value instanceof Map<?, ?> unknown && !unknown.isEmpty()) {
                    problems.add(path + ": fields the Kubernetes API does not have: " + unknown.keySet());
                }
            } else if (!(node instanceof Quantity) && !(node instanceof IntOrString)) {
                unknownFields(value, path + "." + propertyName(getter), problems);
            }
        }
    }

    private static String propertyName(Method getter) {
        String name = getter.getName().startsWith("is") ? getter.getName().substring(2) : getter.getName().substring(3);
        return name.isEmpty() ? name : Character.toLowerCase(name.charAt(0)) + name.substring(1);
    }

    // --- reading ---

    private static List<Path> manifestFiles() throws IOException {
        Map<String, Object> kustomization = yaml(MANIFESTS.resolve("kustomization.yaml"));
        @SuppressWarnings("unchecked")
        List<String> listed = (List<String>) kustomization.get("resources");
        try (Stream<Path> files = Files.list(MANIFESTS)) {
            List<Path> present = files.filter(f -> f.toString().endsWith(".yaml") && !f.endsWith("kustomization.yaml")).toList();
            // In the kustomization's order, so a missing or extra file shows as a difference of the lists.
            List<Path> ordered = new ArrayList<>(listed.stream().map(MANIFESTS::resolve).filter(present::contains).toList());
            present.stream().filter(f -> !ordered.contains(f)).forEach(ordered::add);
            return ordered;
        }
    }

    private static List<String> documents(String yaml) {
        List<String> documents = new ArrayList<>();
        for (String document : yaml.split("(?m)^---\\s*$")) {
            if (document.lines().anyMatch(line -> !line.isBlank() && !line.trim().startsWith("#"))) {
                documents.add(document);
            }
        }
        return documents;
    }

    private static <T extends HasMetadata> List<T> all(Class<T> type) throws IOException {
        List<T> found = new ArrayList<>();
        for (Path file : manifestFiles()) {
            for (String document : documents(Files.readString(file))) {
                HasMetadata resource = bind(document);
                if (type.isInstance(resource)) {
                    found.add(type.cast(resource));
                }
            }
        }
        return found;
    }

    private static GenericKubernetesResource operatorResource(String apiVersion, String kind) throws IOException {
        return all(GenericKubernetesResource.class).stream()
                .filter(r -> apiVersion.equals(r.getApiVersion()) && kind.equals(r.getKind())).findFirst()
                .orElseThrow(() -> new AssertionError("no " + kind + " (" + apiVersion + ") in deploy/kubernetes"));
    }

    private static Map<String, Long> kinds(List<String> documents) {
        return documents.stream().map(d -> bind(d).getKind())
                .collect(Collectors.groupingBy(k -> k, TreeMap::new, Collectors.counting()));
    }

    /** {@code kubectl kustomize}'s output, split into documents; null without kubectl. */
    private static List<String> render() throws Exception {
        String kubectl = System.getenv().getOrDefault("KUBECTL", "kubectl");
        Process process;
        try {
            process = new ProcessBuilder(kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", MANIFESTS.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException notInstalled) {
            return null;
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("kubectl kustomize: %s", output).isZero();
        return documents(output);
    }

    private static Map<String, Object> yaml(Path file) throws IOException {
        try (Reader reader = Files.newBufferedReader(file)) {
            return new Yaml().load(reader);
        }
    }

    private static Container container(Deployment deployment) {
        return deployment.getSpec().getTemplate().getSpec().getContainers().get(0);
    }

    private static String env(Container container, String name) {
        return container.getEnv().stream().filter(v -> v.getName().equals(name)).map(EnvVar::getValue).findFirst().orElse(null);
    }

    private static boolean podName(Container container, String name) {
        return container.getEnv().stream().anyMatch(v -> v.getName().equals(name) && v.getValueFrom() != null
                && "metadata.name".equals(v.getValueFrom().getFieldRef().getFieldPath()));
    }

    @SuppressWarnings("unchecked")
    private static String composePostgresSetting(String name) throws IOException {
        Map<String, Object> compose = yaml(ROOT.resolve("docker-compose.yml"));
        List<String> command = (List<String>) ((Map<String, Map<String, Object>>) compose.get("services")).get("postgres").get("command");
        return command.stream().filter(c -> c.startsWith(name + "=")).map(c -> c.substring(name.length() + 1)).findFirst().orElseThrow();
    }
}
