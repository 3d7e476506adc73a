package dev.outboxinbox.inbox.rabbitmq;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The last messages this process dead-lettered, with their reasons, for a page that looks often
 * ({@code GET /dead-letters/summary}): reading the dead-letter queue itself takes every message and
 * writes it back ({@link DeadLetterRedelivery}), too much for a page that polls. Lost on restart; the
 * queue is the record.
 */
@ApplicationScoped
public class RecentDeadLetters {

    /** Kept per queue, so that one channel's flood does not push another's out of its summary. */
    static final int KEPT = 20;

    /** One message this process moved to the dead-letter queue of {@code queue}'s stream. */
    public record Parked(String queue, String messageId, String type, String reason, Instant at) {
    }

    private final Map<String, Deque<Parked>> recent = new TreeMap<>();

    synchronized void add(String queue, String messageId, String type, String reason) {
        Deque<Parked> kept = recent.computeIfAbsent(queue, q -> new ArrayDeque<>());
        kept.addFirst(new Parked(queue, messageId, type, reason, Instant.now()));
        while (kept.size() > KEPT) {
            kept.removeLast();
        }
    }

    /** Every queue's, newest first. */
    public synchronized List<Parked> list() {
        return recent.values().stream().flatMap(Deque::stream).sorted(Comparator.comparing(Parked::at).reversed()).toList();
    }

    /** Those read from {@code queue} (one channel's), newest first. */
    public synchronized List<Parked> list(String queue) {
        return List.copyOf(recent.getOrDefault(queue, new ArrayDeque<>()));
    }
}
