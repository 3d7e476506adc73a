package dev.outboxinbox.relay;

import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/** The packaged relay as a process, configured for the {@link RelayFixture}'s world. */
final class RelayProcess {

    private RelayProcess() {
    }

    static ServiceProcess start(Map<String, String> config, String logName) throws IOException {
        return ServiceProcess.start(Path.of("target", "quarkus-app"), ServiceProcess.asEnvironment(config), new File("target", logName));
    }
}
