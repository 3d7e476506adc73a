package dev.outboxinbox.inbox.rabbitmq;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * The last messages this process dead-lettered, with their reasons, for a page that looks often
 * ({@code GET /dead-letters/summary}): reading the dead-letter queue itself takes every message and
 * writes it back ({@link DeadLetterRedelivery}), too much for a page that polls. Lost on restart; the
 * queue is the record.
 */
@ApplicationScoped
public class RecentDeadLetters {

    static final int KEPT = 20;

    /** One message this process moved to the dead-letter queue. */
    public record Parked(String messageId, String type, String reason, Instant at) {
    }

    private final Deque<Parked> recent = new ArrayDeque<>();

    synchronized void add(String messageId, String type, String reason) {
        recent.addFirst(new Parked(messageId, type, reason, Instant.now()));
        while (recent.size() > KEPT) {
            recent.removeLast();
        }
    }

    /** Newest first. */
    public synchronized List<Parked> list() {
        return new ArrayList<>(recent);
    }
}
