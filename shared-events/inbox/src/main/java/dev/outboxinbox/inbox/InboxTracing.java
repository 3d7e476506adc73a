package dev.outboxinbox.inbox;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.util.HashMap;
import java.util.Map;

/**
 * The consumer's hop in a trace: a CONSUMER span per message that arrives with a {@code traceparent},
 * a child of the producer's (outbox-relay's publish span), from its arrival to its outcome (the inbox
 * transaction committed, a duplicate acked, a poison message dead-lettered). Its traceparent is handed
 * to the effect ({@link InboxMessage#traceparent()}), so a reply written to an outbox in the same
 * transaction continues the same trace. Without OpenTelemetry in the service, the no-op tracer hands
 * the incoming traceparent on untouched.
 */
@ApplicationScoped
public class InboxTracing {

    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
    private static final TextMapGetter<Map<String, Object>> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, Object> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, Object> carrier, String key) {
            Object value = carrier == null ? null : carrier.get(key);
            return value == null ? null : value.toString();
        }
    };

    private final Tracer tracer;

    @Inject
    InboxTracing(Instance<OpenTelemetry> openTelemetry) {
        this((openTelemetry.isResolvable() ? openTelemetry.get() : OpenTelemetry.noop()).getTracer("inbox"));
    }

    InboxTracing(Tracer tracer) {
        this.tracer = tracer;
    }

    /**
     * A span for a message {@code consumer} took from {@code queue}; an invalid (nothing recorded) span if the
     * message carries no trace.
     */
    public Span receiving(String queue, String consumer, String messageId, Map<String, Object> headers) {
        if (headers == null || headers.get(InboxHeaders.TRACEPARENT) == null) {
            return Span.getInvalid();
        }
        Context parent = W3C.extract(Context.root(), headers, HEADERS);
        return tracer.spanBuilder(queue + " process").setSpanKind(SpanKind.CONSUMER).setParent(parent)
                .setAttribute("messaging.system", "rabbitmq")
                .setAttribute("messaging.operation.type", "process")
                .setAttribute("messaging.destination.name", queue)
                .setAttribute("messaging.message.id", String.valueOf(messageId))
                .setAttribute("messaging.consumer.group.name", consumer)
                .startSpan();
    }

    /**
     * Makes the message's trace the current context until the scope is closed, so that whatever runs in
     * between (an event sent with the outbox library's emitter, a span of the service's own) continues
     * it. Nothing changes for a message without a trace, or one whose traceparent is unreadable.
     */
    static Scope makeCurrent(String traceparent) {
        if (traceparent == null) {
            return Scope.noop();
        }
        Context context = W3C.extract(Context.root(), Map.<String, Object>of(InboxHeaders.TRACEPARENT, traceparent), HEADERS);
        return Span.fromContext(context).getSpanContext().isValid() ? context.makeCurrent() : Scope.noop();
    }

    /** The span's W3C traceparent, or null if it has no valid context. */
    public static String traceparent(Span span) {
        if (!span.getSpanContext().isValid()) {
            return null;
        }
        Map<String, String> carrier = new HashMap<>();
        W3C.inject(Context.root().with(span), carrier, Map::put);
        return carrier.get(InboxHeaders.TRACEPARENT);
    }

    /** Ends the span with the message's outcome ({@code applied}, {@code duplicate}, {@code unchanged}, {@code poison}, {@code requeued}). */
    public static void ended(Span span, String outcome, String reason) {
        span.setAttribute("inbox.outcome", outcome);
        if (reason != null) {
            span.setAttribute("inbox.reason", reason);
        }
        if ("poison".equals(outcome)) {
            span.setStatus(StatusCode.ERROR, reason == null ? "dead-lettered" : reason);
        }
        span.end();
    }
}
