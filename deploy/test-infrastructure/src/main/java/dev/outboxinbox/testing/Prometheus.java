package dev.outboxinbox.testing;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads samples out of a {@code /q/metrics} page (the Prometheus text format), for tests and harnesses. */
public final class Prometheus {

    private static final Pattern SAMPLE = Pattern.compile("(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{([^}]*)})? (\\S+)$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

    private Prometheus() {
    }

    /**
     * The value of the first sample called {@code name} whose labels include {@code labels}
     * ({@code "consumer", "inventory-service", "outcome", "applied"}), if the page has one.
     */
    public static OptionalDouble find(String page, String name, String... labels) {
        Map<String, String> wanted = new LinkedHashMap<>();
        for (int i = 0; i + 1 < labels.length; i += 2) {
            wanted.put(labels[i], labels[i + 1]);
        }
        Matcher sample = SAMPLE.matcher(page);
        while (sample.find()) {
            if (sample.group(1).equals(name) && labelsOf(sample.group(2)).entrySet().containsAll(wanted.entrySet())) {
                return OptionalDouble.of(Double.parseDouble(sample.group(3)));
            }
        }
        return OptionalDouble.empty();
    }

    /** As {@link #find}, for a sample that must be there. */
    public static double value(String page, String name, String... labels) {
        return find(page, name, labels).orElseThrow(() -> new AssertionError("no sample " + name + " with labels "
                + String.join(",", labels) + " on the metrics page"));
    }

    /** How far a counter moved between two scrapes of one process (a series not on the first page counts from zero). */
    public static double moved(String before, String after, String name, String... labels) {
        return value(after, name, labels) - find(before, name, labels).orElse(0);
    }

    private static Map<String, String> labelsOf(String text) {
        Map<String, String> labels = new LinkedHashMap<>();
        if (text != null) {
            Matcher label = LABEL.matcher(text);
            while (label.find()) {
                labels.put(label.group(1), label.group(2));
            }
        }
        return labels;
    }
}
