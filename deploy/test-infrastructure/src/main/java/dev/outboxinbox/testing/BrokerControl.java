package dev.outboxinbox.testing;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Runs {@code rabbitmqctl} where the broker lives: on this machine, or inside its Testcontainers
 * container. Fault-injection tests use it to stop and start the broker for real.
 */
public final class BrokerControl {

    private final Function<List<String>, Result> runner;

    public record Result(int exitCode, String output) {
    }

    private BrokerControl(Function<List<String>, Result> runner) {
        this.runner = runner;
    }

    static BrokerControl local() {
        return new BrokerControl(args -> {
            List<String> command = new ArrayList<>();
            command.add("rabbitmqctl");
            command.addAll(args);
            try {
                Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
                String output = new String(process.getInputStream().readAllBytes());
                if (!process.waitFor(120, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    return new Result(-1, "timed out: " + command);
                }
                return new Result(process.exitValue(), output);
            } catch (IOException e) {
                return new Result(-1, "cannot run " + command + ": " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Result(-1, "interrupted");
            }
        });
    }

    static BrokerControl inContainer(Function<List<String>, Result> exec) {
        return new BrokerControl(exec);
    }

    public Result rabbitmqctl(String... args) {
        return runner.apply(List.of(args));
    }

    public void rabbitmqctlOrFail(String... args) {
        Result result = rabbitmqctl(args);
        if (result.exitCode() != 0) {
            throw new IllegalStateException("rabbitmqctl " + String.join(" ", args) + " failed: " + result.output());
        }
    }

    /** Stops the RabbitMQ application; the Erlang node stays up, as in a broker restart. */
    public void stopApp() {
        rabbitmqctlOrFail("stop_app");
    }

    public void startApp() {
        rabbitmqctlOrFail("start_app");
        rabbitmqctlOrFail("await_startup");
    }
}
