package dev.outboxinbox.chaos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The running system the faults are done to: deploy/local on this machine, or docker compose.
 * Every operation is the real thing (rabbitmqctl, SIGKILL, a PostgreSQL restart), run as a command.
 */
abstract class Target {

    static final List<String> SERVICES = List.of("order-service", "inventory-service", "outbox-relay", "outbox-relay-inventory");
    /**
     * A second instance of a service, started beside the first for a fault: deploy/local runs it on a
     * port of its own, compose as a one-off container (its port not published). Its instance name, in
     * the variable the service reads it from, names its database session (the lock it asks for).
     */
    enum Extra {
        /** A second inventory-service: it takes its share of the partitions (INBOX_PARTITIONING_INSTANCE). */
        SECOND_INVENTORY("inventory-service", "inventory-service-2", 8092, "INBOX_PARTITIONING_INSTANCE"),
        /** A third inventory-service, for the fault that freezes it and never wakes it (its own port and name). */
        THIRD_INVENTORY("inventory-service", "inventory-service-3", 8094, "INBOX_PARTITIONING_INSTANCE"),
        /** A standby outbox-relay for the same slot (RELAY_LEADERSHIP_INSTANCE). */
        STANDBY_RELAY("outbox-relay", "outbox-relay-standby", 8093, "RELAY_LEADERSHIP_INSTANCE");

        final String service;
        final String instance;
        /** Where deploy/local's extra instance listens (the first: 8082, 8083). */
        final int port;
        final String instanceVariable;

        Extra(String service, String instance, int port, String instanceVariable) {
            this.service = service;
            this.instance = instance;
            this.port = port;
            this.instanceVariable = instanceVariable;
        }

        /**
         * The application_name of an extra inventory-service's pool sessions ({@code inventory-service@<instance>}),
         * so that a fault can tell its transactions in pg_stat_activity; null for a relay. Given as a JDBC property
         * of the pool alone (a system property, case kept): on the JDBC URL it would also rename the partition lock
         * session, whose name says which instance it is (the URL's parameters win over the driver's properties).
         */
        String dataSessionName() {
            return service.equals("inventory-service") ? service + "@" + instance : null;
        }

        /** The JVM option that names the pool's sessions, or nothing. */
        String dataSessionOption() {
            return dataSessionName() == null ? "" : "-Dquarkus.datasource.jdbc.additional-jdbc-properties.ApplicationName=" + dataSessionName();
        }
    }

    protected final Path root;
    /**
     * JVM options each service or extra instance (by name) starts with from now on, beside the default heap
     * settings: a rolling deploy's "before the upgrade" ({@link RollingDeploy}); none by default.
     */
    protected final Map<String, String> javaOptions = new java.util.concurrent.ConcurrentHashMap<>();

    Target(Path root) {
        this.root = root;
    }

    /** Every later start of this service or extra instance (a kill's restart too) runs with these JVM options; "" for none. */
    void javaOptions(String serviceOrInstance, String options) {
        javaOptions.put(serviceOrInstance, options);
    }

    /** SERVICE_JAVA_OPTS for a start: deploy/local's and the image's default heap settings, and the instance's options. */
    protected Map<String, String> javaEnvironment(String serviceOrInstance) {
        String options = javaOptions.getOrDefault(serviceOrInstance, "");
        return options.isBlank() ? Map.of() : Map.of("SERVICE_JAVA_OPTS", DEFAULT_JAVA_OPTS + " " + options);
    }

    /** What deploy/local/lib.sh and the image run java with, unless SERVICE_JAVA_OPTS says otherwise. */
    static final String DEFAULT_JAVA_OPTS = "-Xmx512m -XX:+UseSerialGC";

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

    /** SIGTERM, then waits until it has exited (it finishes what it holds). */
    abstract void stop(String service);

    /**
     * Sends a signal to a service or an extra instance (by its instance name): STOP freezes it where it is
     * (its sockets stay open, nothing it holds is given back), CONT wakes it.
     */
    abstract void signal(String serviceOrInstance, String signal);

    abstract void restartPostgres();

    /** Runs one statement as PostgreSQL's superuser in a database; returns what it printed (psql -tA). */
    abstract String superuserSql(String database, String sql);

    /** Starts the extra instance, without waiting for it. */
    abstract void startExtra(Extra extra);

    /** SIGKILL to the extra instance, or SIGTERM (then waits until it has exited: its shutdown ran). */
    abstract void stopExtra(Extra extra, boolean kill);

    /** SIGKILL to several services at once (one command), without starting them again. */
    abstract void killTogether(List<String> services);

    /** Every service running and ready (after the last fault). */
    abstract void ensureRunning();

    /** Deliveries inventory-service recognised as duplicates, from its log lines (counters die with a killed process). */
    abstract long duplicatesAbsorbed();

    /** The relay's "Recovery done" log lines: each republished the outbox table because its slot could not hold all. */
    abstract List<String> relayRecoveries();

    /** Messages inventory-service's instances held, from their log lines: a newer version than one read (a rolling deploy). */
    abstract long heldByInventory();

    protected String run(Duration timeout, String... command) {
        return run(timeout, List.of(command));
    }

    protected String run(Duration timeout, List<String> command) {
        return run(timeout, Map.of(), command);
    }

    protected String run(Duration timeout, Map<String, String> environment, List<String> command) {
        try {
            Path output = Files.createTempFile("chaos", ".out");
            ProcessBuilder builder = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true)
                    .redirectOutput(output.toFile());
            builder.environment().putAll(environment);
            Process process = builder.start();
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
            run(Duration.ofMinutes(1), javaEnvironment(service), List.of("deploy/local/up", "--no-build", "--no-prepare", "--no-wait", service));
        }

        @Override
        void stop(String service) {
            run(Duration.ofMinutes(2), "deploy/local/down", service);
        }

        @Override
        void signal(String serviceOrInstance, String signal) {
            run(Duration.ofMinutes(1), "bash", "-c", """
                    source deploy/local/lib.sh
                    kill "-$2" "$(< "$RUN_DIR/$1.pid")"
                    """, "signal", serviceOrInstance, signal);
        }

        @Override
        void restartPostgres() {
            // pg_ctl waits 60 s by default; a fast shutdown also waits for each walsender's client to confirm, and a
            // relay that stepped down when its leadership session was ended may hold its replication socket unread
            // until wal_sender_timeout (60 s): give the restart 120 s rather than leave the server stopped.
            run(Duration.ofMinutes(3), "bash", "-c",
                    "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | sort -V | tail -n 1) main restart -- -t 120");
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
        void startExtra(Extra extra) {
            run(Duration.ofMinutes(1), javaEnvironment(extra.instance), List.of("bash", "-c", """
                    source deploy/local/lib.sh && load_env
                    set -a && source "$(env_file "$1")" && set +a
                    export QUARKUS_HTTP_PORT=$2 "$3=$4"
                    mkdir -p "$RUN_DIR/logs"
                    # shellcheck disable=SC2086
                    nohup java ${SERVICE_JAVA_OPTS:--Xmx512m -XX:+UseSerialGC} $5 -jar "$(jar_of "$1")" \\
                        >> "$RUN_DIR/logs/$4.log" 2>&1 < /dev/null &
                    echo $! > "$RUN_DIR/$4.pid"
                    """, "start-extra", extra.service, String.valueOf(extra.port), extra.instanceVariable, extra.instance,
                    extra.dataSessionOption()));
        }

        @Override
        void stopExtra(Extra extra, boolean kill) {
            run(Duration.ofMinutes(1), "bash", "-c", """
                    source deploy/local/lib.sh
                    pid=$(< "$RUN_DIR/$1.pid")
                    kill "-$2" "$pid"
                    while kill -0 "$pid" 2> /dev/null; do sleep 0.1; done
                    rm -f "$RUN_DIR/$1.pid"
                    """, "stop-extra", extra.instance, kill ? "KILL" : "TERM");
        }

        @Override
        void killTogether(List<String> services) {
            List<String> command = new ArrayList<>(List.of("bash", "-c", """
                    source deploy/local/lib.sh
                    pids=()
                    for pid_file in "$@"; do pids+=("$(< "$RUN_DIR/$pid_file.pid")"); done
                    kill -KILL "${pids[@]}"
                    """, "kill-together"));
            command.addAll(services);
            run(Duration.ofMinutes(1), command);
        }

        @Override
        List<String> relayRecoveries() {
            Path logs = Path.of(System.getenv().getOrDefault("LOCAL_RUN_DIR", root.resolve("deploy/local/run").toString())).resolve("logs");
            List<String> recoveries = new ArrayList<>();
            // The standby relay's too, when one ran: whichever led recovered.
            for (String name : List.of("outbox-relay.log", Extra.STANDBY_RELAY.instance + ".log")) {
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
            return inventoryLogLines("Duplicate message");
        }

        @Override
        long heldByInventory() {
            return inventoryLogLines("Holding message");
        }

        private long inventoryLogLines(String containing) {
            Path logs = Path.of(System.getenv().getOrDefault("LOCAL_RUN_DIR", root.resolve("deploy/local/run").toString())).resolve("logs");
            long total = 0;
            for (String name : List.of("inventory-service.log", "inventory-service-2.log", "inventory-service-3.log")) {
                Path log = logs.resolve(name);
                if (!Files.exists(log)) {
                    continue;
                }
                try (var lines = Files.lines(log)) {
                    total += lines.filter(l -> l.contains(containing)).count();
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
        /** The docker command, for the extra instances' one-off containers. */
        private final String docker;
        private final Map<Extra, String> extras = new EnumMap<>(Extra.class);

        Compose(Path root) {
            this(root, System.getenv().getOrDefault("COMPOSE", "docker compose"), System.getenv().getOrDefault("CHAOS_COMPOSE_FILES", ""),
                    "docker");
        }

        /** @param files compose files separated by ':' */
        Compose(Path root, String composeCommand, String files, String docker) {
            super(root);
            this.docker = docker;
            compose = new ArrayList<>(List.of(composeCommand.split(" ")));
            for (String file : files.split(":")) {
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
        void stop(String service) {
            compose("stop", service);
        }

        @Override
        void signal(String serviceOrInstance, String signal) {
            Extra extra = Arrays.stream(Extra.values()).filter(e -> e.instance.equals(serviceOrInstance)).findFirst().orElse(null);
            if (extra == null) {
                compose("kill", "-s", "SIG" + signal, serviceOrInstance);
            } else {
                // SIGSTOP to the container's java (PID 1; from outside its namespace the signal is not ignored).
                run(Duration.ofMinutes(1), docker, "kill", "--signal", "SIG" + signal, extras.get(extra));
            }
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
        void startExtra(Extra extra) {
            // A one-off container of the same service, named by its variable; its port is not published.
            List<String> command = new ArrayList<>(List.of("run", "-d", "--no-deps", "-e", extra.instanceVariable + "=" + extra.instance));
            if (extra.dataSessionName() != null) {
                // The image's entrypoint runs java $SERVICE_JAVA_OPTS (its default, and the pool's session name).
                command.addAll(List.of("-e", "SERVICE_JAVA_OPTS=-Xmx512m -XX:+UseSerialGC " + extra.dataSessionOption()));
            }
            command.add(extra.service);
            extras.put(extra, compose(command.toArray(String[]::new)).trim());
        }

        @Override
        void stopExtra(Extra extra, boolean kill) {
            String container = extras.remove(extra);
            if (kill) {
                run(Duration.ofMinutes(1), docker, "rm", "-f", container);
            } else {
                run(Duration.ofMinutes(2), docker, "stop", "--time", "60", container);
                run(Duration.ofMinutes(1), docker, "rm", container);
            }
        }

        @Override
        void killTogether(List<String> services) {
            List<String> command = new ArrayList<>(List.of("kill", "-s", "SIGKILL"));
            for (String service : services) {
                Extra extra = Arrays.stream(Extra.values()).filter(e -> e.instance.equals(service)).findFirst().orElse(null);
                if (extra == null) {
                    command.add(service);
                } else {
                    run(Duration.ofMinutes(1), docker, "kill", "--signal", "SIGKILL", extras.get(extra));
                }
            }
            compose(command.toArray(String[]::new));
        }

        @Override
        List<String> relayRecoveries() {
            return compose("logs", "--no-color", "outbox-relay").lines().filter(l -> l.contains("Recovery done")).toList();
        }

        @Override
        long duplicatesAbsorbed() {
            return compose("logs", "--no-color", "inventory-service").lines().filter(l -> l.contains("Duplicate message")).count();
        }

        @Override
        long heldByInventory() {
            return compose("logs", "--no-color", "inventory-service").lines().filter(l -> l.contains("Holding message")).count();
        }

        /** compose's services take their variables from docker-compose.yml alone: no per-run JVM options there. */
        @Override
        void javaOptions(String serviceOrInstance, String options) {
            throw new UnsupportedOperationException("--rolling-deploy starts services with JVM options of their own, which"
                    + " docker-compose.yml does not pass on: run it with --target local");
        }
    }
}
