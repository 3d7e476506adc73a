package dev.outboxinbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class PercentilesTest {

    @Test
    void nearestRankOfShuffledValues() {
        List<Double> values = new ArrayList<>();
        for (int i = 1; i <= 200; i++) {
            values.add((double) i);
        }
        Collections.shuffle(values);
        Percentiles p = Percentiles.of(values);
        assertThat(p.n()).isEqualTo(200);
        assertThat(p.p50()).isEqualTo(100);
        assertThat(p.p95()).isEqualTo(190);
        assertThat(p.p99()).isEqualTo(198);
        assertThat(p.max()).isEqualTo(200);
    }

    @Test
    void noValuesNoFigures() {
        assertThat(Percentiles.of(List.of()).p50()).isNaN();
        assertThat(Percentiles.of(List.of(7.0)).p99()).isEqualTo(7.0);
    }
}
