package dev.outboxinbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HotspotsTest {

    @Test
    void namesTheLayerOfAClass() {
        assertThat(Hotspots.layerOf("org.hibernate.engine.spi.ActionQueue")).isEqualTo("Hibernate ORM");
        assertThat(Hotspots.layerOf("io.quarkus.hibernate.orm.runtime.session.TransactionScopedSession")).isEqualTo("Hibernate ORM");
        assertThat(Hotspots.layerOf("io.quarkus.arc.impl.ArcContainerImpl")).isEqualTo("Quarkus and ArC");
        assertThat(Hotspots.layerOf("org.postgresql.core.v3.QueryExecutorImpl")).isEqualTo("PostgreSQL JDBC driver");
        assertThat(Hotspots.layerOf("dev.outboxinbox.orders.OrderResource")).isEqualTo("this project's code");
        assertThat(Hotspots.layerOf("org.apache.commons.lang3.StringUtils")).isEqualTo("org.apache");
    }

    /** A real recording of this JVM while a method of ours burns CPU: the samples land on our code. */
    @Test
    void countsEachSampleForItsInnermostFrameOutsideTheJdk(@TempDir Path directory) throws Exception {
        Path file = directory.resolve("self.jfr");
        try (Recording recording = new Recording(Configuration.getConfiguration("profile"))) {
            recording.start();
            long sink = burn(Duration.ofMillis(1500));
            recording.stop();
            recording.dump(file);
            assertThat(sink).isNotZero();
        }
        Hotspots.Profile profile = Hotspots.read("test", file);
        assertThat(profile.samples()).isGreaterThan(20);
        assertThat(profile.layers().get(0).name()).isEqualTo("this project's code");
        assertThat(profile.layers().get(0).share()).isGreaterThan(0.5);
        assertThat(profile.methods().get(0).name()).isEqualTo("benchmarks.HotspotsTest.burn");
    }

    /** Hashes strings (JDK code called from here) until the time is up. */
    private static long burn(Duration duration) {
        long end = System.nanoTime() + duration.toNanos();
        long sink = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                sink += ("x" + i + sink).hashCode();
            }
        }
        return sink;
    }
}
