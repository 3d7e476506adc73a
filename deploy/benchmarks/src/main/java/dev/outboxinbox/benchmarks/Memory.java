package dev.outboxinbox.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Resident memory (RSS, from {@code /proc/<pid>/status}) of the services: once, or the largest
 * seen while sampling every 250 ms.
 */
final class Memory implements AutoCloseable {

    private final Map<String, Long> pids;
    private final Map<String, Long> peakKib = new LinkedHashMap<>();
    private final ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "rss-sampler");
        thread.setDaemon(true);
        return thread;
    });

    private Memory(Map<String, Long> pids) {
        this.pids = pids;
    }

    /** Starts sampling until {@link #close()}; {@link #peakMib()} is the largest RSS each process had. */
    static Memory samplingPeak(Map<String, Long> pids) {
        Memory memory = new Memory(pids);
        memory.sampler.scheduleAtFixedRate(memory::sample, 0, 250, TimeUnit.MILLISECONDS);
        return memory;
    }

    /** RSS now, MiB per service. */
    static Map<String, Double> nowMib(Map<String, Long> pids) {
        Map<String, Double> mib = new LinkedHashMap<>();
        pids.forEach((service, pid) -> mib.put(service, rssKib(pid) / 1024.0));
        return mib;
    }

    private synchronized void sample() {
        pids.forEach((service, pid) -> peakKib.merge(service, rssKib(pid), Math::max));
    }

    synchronized Map<String, Double> peakMib() {
        Map<String, Double> mib = new LinkedHashMap<>();
        peakKib.forEach((service, kib) -> mib.put(service, kib / 1024.0));
        return mib;
    }

    @Override
    public void close() throws InterruptedException {
        sampler.shutdownNow();
        sampler.awaitTermination(5, TimeUnit.SECONDS);
        sample();
    }

    /** VmRSS in KiB; 0 if the process is gone. */
    static long rssKib(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(pid), "status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
            return 0;
        } catch (IOException | RuntimeException gone) {
            return 0;
        }
    }
}
