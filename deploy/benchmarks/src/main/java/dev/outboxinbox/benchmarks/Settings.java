package dev.outboxinbox.benchmarks;

/**
 * The sizes of one run. The full run is the one the README reports; the smoke run (CI) goes through
 * every step with small counts, so the harness cannot rot, and its numbers mean nothing. Each size
 * can be set on its own with a system property of its name ({@code -Dbacklog=20000}).
 *
 * @param clients          concurrent clients: HTTP requests in flight at saturation, and pgbench's clients
 * @param ceilingSeconds   each pgbench run (the ceiling's and the floor's)
 * @param floorBatch       orders per consumer batch and per relay offset commit in the floor's pgbench run
 * @param warmupSeconds     orders placed at saturation (wrk) before anything is measured (JIT, pools, caches), and at
 *                          half that rate before the latency run
 * @param saturationSeconds orders placed at saturation (wrk), measured
 * @param profileSeconds    orders placed at saturation afterwards, with JFR recording each service (not measured)
 * @param latencySeconds   the latency run, at half the saturation rate
 * @param backlog          outbox rows each relay drains, cold and warm
 * @param peerRounds       rounds of the relay against Debezium Server, the order of the two alternating
 * @param inboxEvents      events inventory-service takes in each measured round, inbox on and off
 * @param inboxRounds      rounds of inbox on/off, alternating
 */
record Settings(boolean smoke, int clients, int ceilingSeconds, int floorBatch, int warmupSeconds, int saturationSeconds, int profileSeconds,
                int latencySeconds, int backlog, int peerRounds, int inboxEvents, int inboxRounds) {

    static Settings of(boolean smoke) {
        return smoke
                ? new Settings(true, size("clients", 32), size("ceilingSeconds", 2), size("floorBatch", 10), size("warmupSeconds", 2),
                        size("saturationSeconds", 3), size("profileSeconds", 2), size("latencySeconds", 3),
                        size("backlog", 500), size("peerRounds", 1), size("inboxEvents", 300), size("inboxRounds", 1))
                : new Settings(false, size("clients", 32), size("ceilingSeconds", 30), size("floorBatch", 10), size("warmupSeconds", 20),
                        size("saturationSeconds", 120), size("profileSeconds", 30), size("latencySeconds", 60),
                        size("backlog", 100_000), size("peerRounds", 2), size("inboxEvents", 20_000), size("inboxRounds", 3));
    }

    private static int size(String name, int fallback) {
        return Integer.getInteger(name, fallback);
    }
}
