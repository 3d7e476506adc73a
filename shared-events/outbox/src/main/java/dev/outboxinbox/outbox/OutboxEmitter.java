package dev.outboxinbox.outbox;

import dev.outboxinbox.outbox.api.OutboxEvent;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Transactional;
import java.util.List;
import java.util.Objects;

/**
 * What a producer calls: {@code outbox.send(event)} in the transaction that changes the business
 * state, for any {@link OutboxEvent}. Exchange, routing key, message id, partition key, schema
 * version and time come from the event; the trace it continues from the current span (an HTTP
 * request's, or the incoming message's inside an {@code @Inbox} method), unless the caller names one.
 * {@code MANDATORY}, like {@link OutboxWriter}: an event never commits on its own.
 */
@ApplicationScoped
public class OutboxEmitter {

    /**
     * An event and the trace it continues: what a batch consumer sends, each reply continuing its own
     * incoming message's trace.
     *
     * @param traceparent W3C trace context of what caused the event, or null for none
     */
    public record Traced(OutboxEvent event, String traceparent) {

        public Traced {
            Objects.requireNonNull(event, "event");
        }
    }

    private final OutboxWriter writer;

    OutboxEmitter(OutboxWriter writer) {
        this.writer = writer;
    }

    /**
     * The event, continuing the current span's trace: an HTTP request's, or the incoming message's inside
     * an {@code @Inbox} method. None if there is no valid current span, as inside a {@code BatchEffects}
     * (a batch has many traces): there, {@link #sendTraced} names each event's.
     */
    @Transactional(Transactional.TxType.MANDATORY)
    public void send(OutboxEvent event) {
        send(event, currentTraceparent());
    }

    /**
     * The event, continuing the given trace: where the cause is not the current span (a client's
     * traceparent when this service records no spans).
     *
     * @param traceparent W3C trace context, or null (written as given: a consumer ignores one it cannot read)
     */
    @Transactional(Transactional.TxType.MANDATORY)
    public void send(OutboxEvent event, String traceparent) {
        writer.append(message(event, traceparent));
    }

    /** Many events in one statement, all continuing the current span's trace. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void sendAll(List<? extends OutboxEvent> events) {
        String traceparent = currentTraceparent();
        writer.appendAll(events.stream().map(event -> message(event, traceparent)).toList());
    }

    /** Many events in one statement, each continuing its own trace. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void sendTraced(List<Traced> events) {
        writer.appendAll(events.stream().map(traced -> message(traced.event(), traced.traceparent())).toList());
    }

    /** The current span's W3C traceparent, or null without a valid one (no request, tracing off). */
    public static String currentTraceparent() {
        SpanContext span = Span.current().getSpanContext();
        return span.isValid() ? "00-" + span.getTraceId() + "-" + span.getSpanId() + "-" + span.getTraceFlags().asHex() : null;
    }

    private static OutboxMessage message(OutboxEvent event, String traceparent) {
        return new OutboxMessage(event.eventId(), event.aggregateType(), event.aggregateId(), event.eventType(),
                event.schemaVersion(), event.payloadJson(), traceparent, event.occurredAt());
    }
}
