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

    private static String relayPage(long readFast, long handedFast, long confirmedFast, long all) {
        return """
                # TYPE outbox_relay_commit_to_read_seconds histogram
                outbox_relay_commit_to_read_seconds_bucket{le="0.01"} %d
                outbox_relay_commit_to_read_seconds_bucket{le="+Inf"} %d
                outbox_relay_commit_to_handed_seconds_bucket{le="0.01"} %d
                outbox_relay_commit_to_handed_seconds_bucket{le="+Inf"} %d
                outbox_relay_commit_to_confirmed_seconds_bucket{le="0.01"} %d
                outbox_relay_commit_to_confirmed_seconds_bucket{le="+Inf"} %d
                """.formatted(readFast, all, handedFast, all, confirmedFast, all);
    }

    @Test
    void eachRelaysStagesAreAddedUpOnTheirOwnAndShownAfterTheConsumers() {
        PipelineFigures figures = PipelineFigures.sampling(Map.of(), Map.of(), java.time.Duration.ofHours(1));
        figures.addRelayBuckets("outbox-relay", relayPage(10, 10, 10, 10));
        figures.addRelayBuckets("outbox-relay", relayPage(100, 60, 10, 100));      // +90: all read fast, 50 handed fast, none confirmed fast
        figures.addRelayBuckets("outbox-relay-inventory", relayPage(0, 0, 0, 4));  // another relay: every stage slow

        assertThat(figures.relayQuantile("outbox-relay", "read", 0.99)).isLessThanOrEqualTo(0.01);
        assertThat(figures.relayQuantile("outbox-relay", "handed", 0.5)).isLessThanOrEqualTo(0.01);
        assertThat(figures.relayQuantile("outbox-relay", "handed", 0.9)).as("past the fast ones: the last finite bound").isEqualTo(0.01);
        assertThat(figures.relayQuantile("outbox-relay", "confirmed", 0.5)).as("90 of 100 beyond 10 ms").isEqualTo(0.01);
        assertThat(figures.relayQuantile("outbox-relay-inventory", "read", 0.5)).as("counted apart from the other relay's").isEqualTo(0.01);
        assertThat(figures.relayQuantile("outbox-relay", "nothing", 0.5)).isNaN();
        assertThat(figures.count("outbox-relay")).as("a relay's stages are not a consumer's commit → applied").isZero();
        assertThat(figures.summary()).containsKey("relayCommitTo");
        assertThat(figures.toText()).contains("commit → outbox-relay: read p50 ", "commit → outbox-relay-inventory: ");
        figures.close();
    }

    @Test
    void aRestartedRelayAddsWhatItCountedAfterTheRestart() {
        PipelineFigures figures = PipelineFigures.sampling(Map.of(), Map.of(), java.time.Duration.ofHours(1));
        figures.addRelayBuckets("outbox-relay", relayPage(100, 100, 100, 100));
        figures.addRelayBuckets("outbox-relay", relayPage(0, 0, 0, 3));   // killed and back: 3 new, all slow

        assertThat(figures.relayQuantile("outbox-relay", "read", 0.5)).as("the 100 fast ones are kept").isLessThan(0.01);
        assertThat(figures.relayQuantile("outbox-relay", "read", 0.99)).as("the 3 slow ones are added").isEqualTo(0.01);
        figures.close();
    }
}
