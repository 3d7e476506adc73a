package dev.outboxinbox.chaos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The running system the faults are done to: deploy/local on this machine, or docker compose.
 * Every operation is the real thing (rabbitmqctl, SIGKILL, a PostgreSQL restart), run as a command.
 */
abstract class Target {

    static final List<String> SERVICES = List.of("order-service", "inventory-service", "outbox-relay", "outbox-relay-inventory");
    /** Where the second inventory-service of deploy/local listens (the first is on 8082). */
    static final int SECOND_INVENTORY_PORT = 8092;
    /** Where the standby outbox-relay of deploy/local listens (the first is on 8083). */
    static final int STANDBY_RELAY_PORT = 8093;
    /** The standby relay's instance name (RELAY_LEADERSHIP_INSTANCE): its lock session is named after it. */
    static final String STANDBY_RELAY = "outbox-relay-standby";

    protected final Path root;

    Target(Path root) {
        this.root = root;
    }

    static Target named(String name, Path root) {
        return switch (name) {
            case "local" -> new Local(root);
            case "compose" -> new Compose(root);
            default -> throw new IllegalArgumentException("unknown target '" + name + "' (local or compose)");
        };
    }

    /** Stops the RabbitMQ application (connections drop, the node stays up). */
    abstract void stopBrokerApp();

    abstract void startBrokerApp();

    /** Restarts the whole broker node. */
    abstract void restartBrokerNode();

    /** SIGKILL: nothing finishes, no shutdown hook runs. */
    abstract void kill(String service);

    /** Starts a service again without waiting for it. */
    abstract void start(String service);

    abstract void restartPostgres();

    /** Runs one statement as PostgreSQL's superuser in a database; returns what it printed (psql -tA). */
    abstract String superuserSql(String database, String sql);

    /** A second inventory-service on the same queue, without waiting for it. */
    abstract void startSecondInventory();

    /** SIGKILL to the second inventory-service. */
    abstract void killSecondInventory();

    /** A second outbox-relay for the same slot ({@link #STANDBY_RELAY}), without waiting for it. */
    abstract void startStandbyRelay();

    /** SIGKILL to the second outbox-relay. */
    abstract void killStandbyRelay();

    /** Every service running and ready (after the last fault). */
    abstract void ensureRunning();

    /** Deliveries inventory-service recognised as duplicates, from its log lines (counters die with a killed process). */
    abstract long duplicatesAbsorbed();

    /** The relay's "Recovery done" log lines: each republished the outbox table because its slot could not hold all. */
    abstract List<String> relayRecoveries();

    protected String run(Duration timeout, String... command) {
        return run(timeout, List.of(command));
    }

    protected String run(Duration timeout, List<String> command) {
        try {
            Path output = Files.createTempFile("chaos", ".out");
            Process process = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("timed out after " + timeout + ": " + String.join(" ", command));
            }
            String text = Files.readString(output);
            Files.delete(output);
            if (process.exitValue() != 0) {
                throw new IllegalStateException("failed (" + process.exitValue() + "): " + String.join(" ", command) + "\n" + text);
            }
            return text;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + command, e);
        }
    }

    /** deploy/local on this machine's own PostgreSQL and RabbitMQ. */
    static final class Local extends Target {

        Local(Path root) {
            super(root);
        }

        @Override
        void stopBrokerApp() {
            run(Duration.ofMinutes(2), "rabbitmqctl", "-q", "stop_app");
        }

        @Override
        void startBrokerApp() {
            run(Duration.ofMinutes(2), "rabbitmqctl", "-q", "start_app");
            run(Duration.ofMinutes(2), "rabbitmqctl", "-q", "await_startup");
        }

        @Override
        void restartBrokerNode() {
            run(Duration.ofMinutes(2), "rabbitmqctl", "-q", "stop");
            run(Duration.ofMinutes(1), "rabbitmq-server", "-detached");
            run(Duration.ofMinutes(2), "bash", "-c", "until rabbitmq-diagnostics -q ping >/dev/null 2>&1; do sleep 0.5; done;"
                    + " rabbitmqctl -q await_startup");
        }

        @Override
        void kill(String service) {
            run(Duration.ofMinutes(1), "deploy/local/down", "--kill", service);
        }

        @Override
        void start(String service) {
            run(Duration.ofMinutes(1), "deploy/local/up", "--no-build", "--no-prepare", "--no-wait", service);
        }

        @Override
        void restartPostgres() {
            run(Duration.ofMinutes(2), "bash", "-c",
                    "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | sort -V | tail -n 1) main restart");
        }

        @Override
        void ensureRunning() {
            List<String> command = new ArrayList<>(List.of("deploy/local/up", "--no-build", "--no-prepare", "--timeout", "240"));
            run(Duration.ofMinutes(5), command);
        }

        @Override
        String superuserSql(String database, String sql) {
            return run(Duration.ofMinutes(1), "bash", "-c", "source deploy/local/lib.sh && load_env && psql -X -q -v ON_ERROR_STOP=1"
                    + " -h \"$POSTGRES_HOST\" -p \"$POSTGRES_PORT\" -U \"${POSTGRES_SUPERUSER:-postgres}\" -d \"$1\" -tAc \"$2\"",
                    "superuser-sql", database, sql);
        }

        @Override
        void startSecondInventory() {
            run(Duration.ofMinutes(1), "bash", "-c", """
                    source deploy/local/lib.sh && load_env
                    set -a && source "$(env_file inventory-service)" && set +a
                    export QUARKUS_HTTP_PORT=%d
                    mkdir -p "$RUN_DIR/logs"
                    # shellcheck disable=SC2086
                    nohup java ${SERVICE_JAVA_OPTS:--Xmx512m -XX:+UseSerialGC} -jar "$(jar_of inventory-service)" \
                        >> "$RUN_DIR/logs/inventory-service-2.log" 2>&1 < /dev/null &
                    echo $! > "$RUN_DIR/inventory-service-2.pid"
                    """.formatted(SECOND_INVENTORY_PORT));
        }

        @Override
        void killSecondInventory() {
            run(Duration.ofMinutes(1), "bash", "-c", "source deploy/local/lib.sh"
                    + " && kill -KILL \"$(< \"$RUN_DIR/inventory-service-2.pid\")\" && rm -f \"$RUN_DIR/inventory-service-2.pid\"");
        }

        @Override
        void startStandbyRelay() {
            run(Duration.ofMinutes(1), "bash", "-c", """
                    source deploy/local/lib.sh && load_env
                    set -a && source "$(env_file outbox-relay)" && set +a
                    export QUARKUS_HTTP_PORT=%d RELAY_LEADERSHIP_INSTANCE=%s
                    mkdir -p "$RUN_DIR/logs"
                    # shellcheck disable=SC2086
                    nohup java ${SERVICE_JAVA_OPTS:--Xmx512m -XX:+UseSerialGC} -jar "$(jar_of outbox-relay)" \\
                        >> "$RUN_DIR/logs/%s.log" 2>&1 < /dev/null &
                    echo $! > "$RUN_DIR/%s.pid"
                    """.formatted(STANDBY_RELAY_PORT, STANDBY_RELAY, STANDBY_RELAY, STANDBY_RELAY));
        }

        @Override
        void killStandbyRelay() {
            run(Duration.ofMinutes(1), "bash", "-c", "source deploy/local/lib.sh && kill -KILL \"$(< \"$RUN_DIR/%s.pid\")\" && rm -f \"$RUN_DIR/%s.pid\""
                    .formatted(STANDBY_RELAY, STANDBY_RELAY));
        }

        @Override
        List<String> relayRecoveries() {
            Path logs = Path.of(System.getenv().getOrDefault("LOCAL_RUN_DIR", root.resolve("deploy/local/run").toString())).resolve("logs");
            List<String> recoveries = new ArrayList<>();
            // The standby relay's too, when one ran: whichever led recovered.
            for (String name : List.of("outbox-relay.log", STANDBY_RELAY + ".log")) {
                Path log = logs.resolve(name);
                if (!Files.exists(log)) {
                    continue;
                }
                try (var lines = Files.lines(log)) {
                    lines.filter(l -> l.contains("Recovery done")).forEach(recoveries::add);
                } catch (IOException e) {
                    throw new IllegalStateException("cannot read " + log, e);
                }
            }
            return recoveries;
        }

        @Override
        long duplicatesAbsorbed() {
            Path logs = Path.of(System.getenv().getOrDefault("LOCAL_RUN_DIR", root.resolve("deploy/local/run").toString())).resolve("logs");
            long total = 0;
            for (String name : List.of("inventory-service.log", "inventory-service-2.log")) {
                Path log = logs.resolve(name);
                if (!Files.exists(log)) {
                    continue;
                }
                try (var lines = Files.lines(log)) {
                    total += lines.filter(l -> l.contains("Duplicate message")).count();
                } catch (IOException e) {
                    throw new IllegalStateException("cannot read " + log, e);
                }
            }
            return total;
        }
    }

    /** docker compose, from the repository root (docker-compose.yml plus any -f files in CHAOS_COMPOSE_FILES). */
    static final class Compose extends Target {

        private final List<String> compose;
        private String secondInventory;
        private String standbyRelay;

        Compose(Path root) {
            super(root);
            compose = new ArrayList<>(List.of(System.getenv().getOrDefault("COMPOSE", "docker compose").split(" ")));
            for (String file : System.getenv().getOrDefault("CHAOS_COMPOSE_FILES", "").split(":")) {
                if (!file.isBlank()) {
                    compose.addAll(List.of("-f", file));
                }
            }
        }

        private String compose(String... args) {
            List<String> command = new ArrayList<>(compose);
            command.addAll(List.of(args));
            return run(Duration.ofMinutes(5), command);
        }

        @Override
        void stopBrokerApp() {
            compose("exec", "-T", "rabbitmq", "rabbitmqctl", "-q", "stop_app");
        }

        @Override
        void startBrokerApp() {
            compose("exec", "-T", "rabbitmq", "rabbitmqctl", "-q", "start_app");
            compose("exec", "-T", "rabbitmq", "rabbitmqctl", "-q", "await_startup");
        }

        @Override
        void restartBrokerNode() {
            compose("restart", "rabbitmq");
            compose("exec", "-T", "rabbitmq", "rabbitmqctl", "-q", "await_startup");
        }

        @Override
        void kill(String service) {
            compose("kill", "-s", "SIGKILL", service);
        }

        @Override
        void start(String service) {
            compose("start", service);
        }

        @Override
        void restartPostgres() {
            compose("restart", "postgres");
        }

        @Override
        void ensureRunning() {
            compose("up", "-d", "--no-build", "--wait");
        }

        @Override
        String superuserSql(String database, String sql) {
            return compose("exec", "-T", "postgres", "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-d", database, "-tAc", sql);
        }

        @Override
        void startSecondInventory() {
            // A one-off container of the same service: it joins the queue; its port is not published.
            secondInventory = compose("run", "-d", "--no-deps", "inventory-service").trim();
        }

        @Override
        void killSecondInventory() {
            run(Duration.ofMinutes(1), "docker", "rm", "-f", secondInventory);
        }

        @Override
        void startStandbyRelay() {
            // A one-off container of the same service, named for its lock session; its port is not published.
            standbyRelay = compose("run", "-d", "--no-deps", "-e", "RELAY_LEADERSHIP_INSTANCE=" + STANDBY_RELAY, "outbox-relay").trim();
        }

        @Override
        void killStandbyRelay() {
            run(Duration.ofMinutes(1), "docker", "rm", "-f", standbyRelay);
        }

        @Override
        List<String> relayRecoveries() {
            return compose("logs", "--no-color", "outbox-relay").lines().filter(l -> l.contains("Recovery done")).toList();
        }

        @Override
        long duplicatesAbsorbed() {
            return compose("logs", "--no-color", "inventory-service").lines().filter(l -> l.contains("Duplicate message")).count();
        }
    }
}
