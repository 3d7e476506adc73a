package dev.outboxinbox.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compose target's commands for the faults that freeze, stop and add instances, against a stub docker
 * that records each call (there is no Docker engine here): what deploy/local does with pids, compose must do
 * with containers, in lockstep.
 */
class ComposeTargetTest {

    @TempDir
    Path dir;

    @Test
    void aThirdInventoryInstanceIsStartedNamedFrozenAndKilledAsAContainer() throws Exception {
        Path calls = dir.resolve("calls");
        Target.Compose compose = new Target.Compose(dir, stub(calls) + " compose", "docker-compose.yml:extra.yml", stub(calls).toString());

        compose.startExtra(Target.Extra.THIRD_INVENTORY);
        compose.signal(Target.Extra.THIRD_INVENTORY.instance, "STOP");
        compose.signal("outbox-relay", "STOP");
        compose.signal("outbox-relay", "CONT");
        compose.stop("inventory-service");
        compose.start("inventory-service");
        compose.stopExtra(Target.Extra.THIRD_INVENTORY, true);

        assertThat(Files.readAllLines(calls)).containsExactly(
                "compose -f docker-compose.yml -f extra.yml run -d --no-deps -e INBOX_PARTITIONING_INSTANCE=inventory-service-3"
                        + " -e SERVICE_JAVA_OPTS=-Xmx512m -XX:+UseSerialGC"
                        + " -Dquarkus.datasource.jdbc.additional-jdbc-properties.ApplicationName=inventory-service@inventory-service-3"
                        + " inventory-service",
                "kill --signal SIGSTOP container-1",
                "compose -f docker-compose.yml -f extra.yml kill -s SIGSTOP outbox-relay",
                "compose -f docker-compose.yml -f extra.yml kill -s SIGCONT outbox-relay",
                "compose -f docker-compose.yml -f extra.yml stop inventory-service",
                "compose -f docker-compose.yml -f extra.yml start inventory-service",
                "rm -f container-1");
    }

    @Test
    void aStandbyRelayIsNotGivenAPoolName() throws Exception {
        Path calls = dir.resolve("calls");
        Target.Compose compose = new Target.Compose(dir, stub(calls) + " compose", "docker-compose.yml", stub(calls).toString());

        compose.startExtra(Target.Extra.STANDBY_RELAY);

        assertThat(Files.readAllLines(calls)).containsExactly(
                "compose -f docker-compose.yml run -d --no-deps -e RELAY_LEADERSHIP_INSTANCE=outbox-relay-standby outbox-relay");
        assertThat(List.of(Target.Extra.values())).filteredOn(e -> e.service.equals("inventory-service"))
                .allSatisfy(e -> assertThat(e.dataSessionName()).isEqualTo("inventory-service@" + e.instance));
    }

    /** A docker that records its arguments, one call a line, and names each container it runs container-1. */
    private Path stub(Path calls) throws Exception {
        Path stub = dir.resolve("docker");
        if (!Files.exists(stub)) {
            Files.writeString(stub, """
                    #!/bin/sh
                    echo "$*" >> '%s'
                    case "$*" in *" run -d "*) echo container-1 ;; esac
                    exit 0
                    """.formatted(calls));
            stub.toFile().setExecutable(true);
        }
        return stub;
    }
}
