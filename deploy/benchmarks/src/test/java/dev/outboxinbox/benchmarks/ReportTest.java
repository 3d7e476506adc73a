package dev.outboxinbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportTest {

    private static Report report(double relayWarm, double inboxOn) {
        Map<String, Object> conditions = new LinkedHashMap<>();
        conditions.put("date", "2026-12-04T05:00:00Z");
        conditions.put("mode", "full");
        conditions.put("cores", 2);
        conditions.put("loadAverageStart", "1.00 1.00 1.00");
        conditions.put("loadAverageEnd", "2.00 2.00 2.00");
        Pipeline.Result pipeline = new Pipeline.Result(32, 1000, 600, 550, 1.5,
                new Cpu.Profile(Map.of("order-service", 3.0, Cpu.POSTGRES, 2.5), 0.98, 40), 30,
                List.of(new Hotspots.Profile("order-service", 12_000,
                        List.of(new Hotspots.Share("Hibernate ORM", 0.31), new Hotspots.Share("PostgreSQL JDBC driver", 0.2)),
                        List.of(new Hotspots.Share("OrderResource.place", 0.04)), 120, "order-service.jfr")),
                300, 18000, new Cpu.Profile(Map.of("order-service", 1.5, Cpu.POSTGRES, 1.2, "outbox-relay", 0.4), 0.85, 60),
                Map.of("inventory-service", Map.of("n", 18000L, "p50Ms", 20L, "p95Ms", 40L, "p99Ms", 90L)),
                Map.of("outbox-relay", stages(2, 9, 14)),
                new Percentiles(18000, 25, 50, 120, 400),
                Map.of("order-service", 200.0), Map.of("order-service", 400.0), Map.of("order-service", 300.0));
        List<RelayPeers.Turn> turns = List.of(
                new RelayPeers.Turn(Report.OUR, 1, new RelayPeers.Drain(3000, 10_000), new RelayPeers.Drain(20, relayWarm), 250),
                new RelayPeers.Turn(Report.PEER, 1, new RelayPeers.Drain(6000, 8_000), new RelayPeers.Drain(30, 9_000), 300),
                new RelayPeers.Turn(Report.PEER, 2, new RelayPeers.Drain(6000, 12_000), new RelayPeers.Drain(30, 11_000), 300),
                new RelayPeers.Turn(Report.OUR, 2, new RelayPeers.Drain(3000, 14_000), new RelayPeers.Drain(20, relayWarm), 250));
        List<InboxCost.Round> inbox = List.of(new InboxCost.Round(1, true, inboxOn, 300), new InboxCost.Round(1, false, 4000, 300));
        return new Report(conditions, List.of(new Ceiling.Result(1000, 20, 32, 30, 30000), new Ceiling.Result(1200, 18, 32, 30, 36000)),
                List.of(new Floor.Result(500, 700, 32, 30, 10, 15000, 0.97, 0.95, 120), new Floor.Result(600, 840, 32, 30, 10, 18000, 0.96, 0.94, 140)),
                pipeline, turns, inbox);
    }

    /** A relay's stages, in order, each with its p50 (ms) and p95, p99 from it. */
    private static Map<String, Map<String, Object>> stages(long read, long handed, long confirmed) {
        Map<String, Map<String, Object>> stages = new LinkedHashMap<>();
        stages.put("read", Map.of("p50Ms", read, "p95Ms", read * 2, "p99Ms", read * 3));
        stages.put("handed", Map.of("p50Ms", handed, "p95Ms", handed * 2, "p99Ms", handed * 3));
        stages.put("confirmed", Map.of("p50Ms", confirmed, "p95Ms", confirmed * 2, "p99Ms", confirmed * 3));
        return stages;
    }

    @Test
    void ratiosAreOfMediansMeasuredInTheSameRun() {
        Map<String, Object> ratios = report(9_000, 3_600).ratios();
        assertThat(ratios.get("pipelineAcceptedOverFloor")).isEqualTo(1.091); // 600 / mean(500, 600)
        assertThat(ratios.get("pipelineAppliedOverFloor")).isEqualTo(1.0);
        assertThat(ratios.get("pipelineAcceptedOverCeiling")).isEqualTo(0.545); // 600 / mean(1000, 1200)
        assertThat(ratios.get("pipelineAppliedOverCeiling")).isEqualTo(0.5);
        assertThat(ratios.get("relayOverDebeziumServerCold")).isEqualTo(1.2); // median 12,000 / median 10,000
        assertThat(ratios.get("relayOverDebeziumServerWarm")).isEqualTo(0.9);
        assertThat(ratios.get("inboxCost")).isEqualTo(0.1);
    }

    @Test
    void goalsSayWhichAreMissed() {
        assertThat(report(9_000, 3_600).goals()).containsEntry("relay ≥ 1.0× Debezium Server, warm", "MISSED")
                .containsEntry("relay ≥ 1.0× Debezium Server, cold", "met")
                .containsEntry("pipeline ≥ 50 % of the database's floor (applied)", "met")
                .containsEntry("inbox costs ≤ 15 %", "met");
        assertThat(report(11_000, 3_000).goals()).containsEntry("relay ≥ 1.0× Debezium Server, warm", "met")
                .containsEntry("inbox costs ≤ 15 %", "MISSED");
    }

    @Test
    void writesTextJsonAndAChart(@TempDir Path directory) throws Exception {
        String text = report(9_000, 3_600).write(directory);
        assertThat(text).contains("1,000 tps", "1,200 tps", "500 orders/s (700 tps, all transactions; 97 % of the orders reserved, 95 % decided; 120 MiB of WAL decoded)", "600 orders/s",
                "pipeline ÷ the database's floor", "outbox-relay ÷ Debezium Server", "1.20× cold, 0.90× warm", "exactly-once costs 10 %", "MISSED",
                "order-service: where its CPU goes (JFR, 12,000 samples, 30 s at saturation)", "Hibernate ORM 31 %, PostgreSQL JDBC driver 20 %",
                "OrderResource.place 4 %; GC 120 ms",
                "commit → read / handed / confirmed, outbox-relay, at 300 orders/s (its histograms)",
                "p50 2 / 9 / 14 ms, p95 4 / 18 / 28 ms, p99 6 / 27 / 42 ms",
                "CPU at 300 orders/s (half the saturation rate): the machine, and per order, all parts",
                "85 % busy; 3.10 ms an order (order-service 1.50, PostgreSQL (every server process) 1.20, outbox-relay 0.40)",
                "placed (order-service) → applied in inventory, at 300 orders/s");
        assertThat(Files.readString(directory.resolve("report.txt"))).isEqualTo(text);
        JsonNode json = new ObjectMapper().readTree(directory.resolve("report.json").toFile());
        assertThat(json.at("/ratios/relayOverDebeziumServerCold").asDouble()).isEqualTo(1.2);
        assertThat(json.at("/relay/0/cold/eventsPerSecond").asDouble()).isEqualTo(10_000);
        assertThat(json.at("/pipeline/placedToApplied/p99").asDouble()).isEqualTo(120);
        assertThat(json.at("/pipeline/relayCommitTo/outbox-relay/confirmed/p99Ms").asLong()).isEqualTo(42);
        assertThat(json.at("/pipeline/latencyCpu/machineShare").asDouble()).isEqualTo(0.85);
        assertThat(json.at("/pipeline/hotspots/0/layers/0/name").asText()).isEqualTo("Hibernate ORM");
        BufferedImage chart = ImageIO.read(directory.resolve("chart.png").toFile());
        assertThat(chart.getWidth()).isEqualTo(1600);
        assertThat(chart.getHeight()).isEqualTo(800);
    }
}
