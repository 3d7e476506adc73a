package dev.outboxinbox.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where the machine's CPU goes during a measured stretch: the CPU time (user + system, from
 * {@code /proc/<pid>/stat}) each part of the pipeline used, per order. The services by their pids; the
 * PostgreSQL server as the sum of all its processes (backends, the relays' walsenders, WAL writer,
 * checkpointer); RabbitMQ's Erlang VM; this harness; the load generator it ran as a child process and waited
 * for (wrk: {@code /proc/self/stat}'s children's times, which count a child once it has ended); and the rest of
 * the machine.
 * The parts' sum against cores × seconds says whether the run was bound by the CPU.
 */
final class Cpu {

    static final String POSTGRES = "PostgreSQL (every server process)";
    static final String RABBITMQ = "RabbitMQ (beam.smp)";
    static final String HARNESS = "the harness (Java: it reads the services' figures)";
    static final String CHILDREN = "the load generator (wrk)";
    static final String OTHER = "everything else on the machine";
    /** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks; 100 on every usual kernel. */
    private static final double TICKS_PER_SECOND = 100;

    /** CPU seconds per part, and when they were read. */
    record Snapshot(Map<String, Double> seconds, long nanos) {
    }

    /**
     * @param msPerOrder   CPU milliseconds each part used per order
     * @param machineShare the parts' sum over cores × elapsed: 1.0 is every core busy all the time
     */
    record Profile(Map<String, Double> msPerOrder, double machineShare, double elapsedSeconds) {
    }

    private Cpu() {
    }

    static Snapshot read(Map<String, Long> services) throws IOException {
        Map<String, Double> seconds = new LinkedHashMap<>();
        services.keySet().forEach(service -> seconds.put(service, 0.0));
        seconds.put(POSTGRES, 0.0);
        seconds.put(RABBITMQ, 0.0);
        seconds.put(HARNESS, 0.0);
        seconds.put(CHILDREN, 0.0);
        seconds.put(OTHER, 0.0);
        Map<Long, String> byPid = new LinkedHashMap<>();
        services.forEach((service, pid) -> byPid.put(pid, service));
        long self = ProcessHandle.current().pid();
        try (DirectoryStream<Path> processes = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path process : processes) {
                String stat;
                try {
                    stat = Files.readString(process.resolve("stat"));
                } catch (IOException gone) {
                    continue;
                }
                long pid = Long.parseLong(process.getFileName().toString());
                String command = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                double cpu = (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / TICKS_PER_SECOND;
                String part = byPid.containsKey(pid) ? byPid.get(pid)
                        : pid == self ? HARNESS
                        : command.startsWith("postgres") ? POSTGRES
                        : command.equals("beam.smp") ? RABBITMQ
                        : OTHER;
                seconds.merge(part, cpu, Double::sum);
                if (pid == self) {
                    seconds.merge(CHILDREN, (Long.parseLong(fields[13]) + Long.parseLong(fields[14])) / TICKS_PER_SECOND, Double::sum);
                }
            }
        }
        return new Snapshot(seconds, System.nanoTime());
    }

    /** What each part used between two snapshots, per order; processes that ended in between count as nothing. */
    static Profile between(Snapshot before, Snapshot after, int orders) {
        double elapsed = (after.nanos() - before.nanos()) / 1e9;
        Map<String, Double> msPerOrder = new LinkedHashMap<>();
        double total = 0;
        for (Map.Entry<String, Double> part : after.seconds().entrySet()) {
            double used = Math.max(0, part.getValue() - before.seconds().getOrDefault(part.getKey(), 0.0));
            total += used;
            msPerOrder.put(part.getKey(), 1000 * used / Math.max(1, orders));
        }
        return new Profile(msPerOrder, total / (Runtime.getRuntime().availableProcessors() * elapsed), elapsed);
    }
}
