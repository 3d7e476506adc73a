package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import org.junit.jupiter.api.Test;

class PipelineFiguresTest {

    private static String page(long le10ms, long le100ms, long le1s, long all) {
        return """
                # TYPE inbox_commit_to_applied_seconds histogram
                inbox_commit_to_applied_seconds_bucket{consumer="inventory-service",le="0.01"} %d
                inbox_commit_to_applied_seconds_bucket{consumer="inventory-service",le="0.1"} %d
                inbox_commit_to_applied_seconds_bucket{consumer="inventory-service",le="1.0"} %d
                inbox_commit_to_applied_seconds_bucket{consumer="inventory-service",le="+Inf"} %d
                inbox_commit_to_applied_seconds_count{consumer="inventory-service"} %d
                """.formatted(le10ms, le100ms, le1s, all, all);
    }

    @Test
    void percentilesInterpolateWithinTheBucketAsPrometheusDoes() {
        PipelineFigures figures = PipelineFigures.sampling(Map.of(), Map.of(), java.time.Duration.ofHours(1));
        figures.addBuckets("a", page(50, 90, 100, 100));

        assertThat(figures.count("inventory-service")).isEqualTo(100);
        assertThat(figures.quantile("inventory-service", 0.5)).isCloseTo(0.01, within(1e-9));
        assertThat(figures.quantile("inventory-service", 0.7)).isCloseTo(0.01 + 0.09 * 20 / 40, within(1e-9));
        assertThat(figures.quantile("inventory-service", 0.95)).isCloseTo(0.1 + 0.9 * 5 / 10, within(1e-9));
        assertThat(figures.quantile("nobody", 0.5)).isNaN();
        figures.close();
    }

    @Test
    void aRestartedConsumerAddsWhatItCountedAfterTheRestartNotLess() {
        PipelineFigures figures = PipelineFigures.sampling(Map.of(), Map.of(), java.time.Duration.ofHours(1));
        figures.addBuckets("a", page(10, 10, 10, 10));
        figures.addBuckets("a", page(20, 20, 20, 20));   // +10, all fast
        figures.addBuckets("a", page(0, 0, 5, 5));       // killed and back: 5 new, slow
        figures.addBuckets("b", page(0, 0, 0, 3));       // a second instance: 3, slower than a second

        assertThat(figures.count("inventory-service")).isEqualTo(28);
        assertThat(figures.quantile("inventory-service", 0.5)).isLessThanOrEqualTo(0.01);
        assertThat(figures.quantile("inventory-service", 0.99)).as("beyond the last finite bucket: its bound").isEqualTo(1.0);
        figures.close();
    }
}
