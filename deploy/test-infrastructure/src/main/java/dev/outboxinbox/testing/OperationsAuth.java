package dev.outboxinbox.testing;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

/**
 * The credentials tests and harnesses give the operations endpoints and {@code /q/metrics} (HTTP
 * Basic): OPERATOR_PASSWORD and MONITOR_PASSWORD from the environment where they are set (the chaos
 * runner and the benchmarks read .env, as deploy/local does), else the test secrets the services' test
 * profile falls back to. A service process a test or harness starts gets them through {@link #environment()}.
 */
public final class OperationsAuth {

    public static final String OPERATOR_PASSWORD = fromEnvironment("OPERATOR_PASSWORD", "operator-test-secret");
    public static final String MONITOR_PASSWORD = fromEnvironment("MONITOR_PASSWORD", "monitor-test-secret");

    private OperationsAuth() {
    }

    /** An {@code Authorization} header value with the {@code operator} role (reads and re-drives). */
    public static String operator() {
        return basic("operator", OPERATOR_PASSWORD);
    }

    /** An {@code Authorization} header value with the {@code monitor} role (metrics and summaries only). */
    public static String monitor() {
        return basic("monitor", MONITOR_PASSWORD);
    }

    /** The variables a service process reads its operators' passwords from. */
    public static Map<String, String> environment() {
        return Map.of("OPERATOR_PASSWORD", OPERATOR_PASSWORD, "MONITOR_PASSWORD", MONITOR_PASSWORD);
    }

    private static String fromEnvironment(String name, String otherwise) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? otherwise : value;
    }

    public static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
}
