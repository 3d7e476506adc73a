package dev.outboxinbox.benchmarks;

import java.util.List;

/** p50/p95/p99 and the maximum of measured values, nearest rank. */
record Percentiles(int n, double p50, double p95, double p99, double max) {

    static Percentiles of(List<Double> values) {
        if (values.isEmpty()) {
            return new Percentiles(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
        }
        List<Double> sorted = values.stream().sorted().toList();
        return new Percentiles(sorted.size(), rank(sorted, 0.50), rank(sorted, 0.95), rank(sorted, 0.99), sorted.get(sorted.size() - 1));
    }

    private static double rank(List<Double> sorted, double q) {
        return sorted.get(Math.max(0, (int) Math.ceil(q * sorted.size()) - 1));
    }
}
