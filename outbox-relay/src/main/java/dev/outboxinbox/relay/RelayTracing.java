package dev.outboxinbox.relay;

import dev.outboxinbox.events.MessageHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The relay's hop in an order's trace. Each event that carries a {@code traceparent} (the outbox
 * row's: the span that wrote it) is published inside a PRODUCER span of its own, a child of that one,
 * from the first publish to its confirm; the message carries the relay span's traceparent on to the
 * consumer. An event the relay publishes again (a retried batch, a restart, a recovery from the table)
 * gets a new span in the same trace: the row's traceparent does not change. Spans are made whether or
 * not they are exported ({@code OTEL_SDK_DISABLED}); without OpenTelemetry at all, the no-op tracer
 * hands the row's traceparent on untouched.
 */
@ApplicationScoped
class RelayTracing {

    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
    private static final TextMapGetter<String> TRACEPARENT = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(String carrier) {
            return Set.of(MessageHeaders.TRACEPARENT);
        }

        @Override
        public String get(String carrier, String key) {
            return MessageHeaders.TRACEPARENT.equals(key) ? carrier : null;
        }
    };

    private final Tracer tracer;

    RelayTracing(Instance<OpenTelemetry> openTelemetry) {
        this.tracer = (openTelemetry.isResolvable() ? openTelemetry.get() : OpenTelemetry.noop()).getTracer("outbox-relay");
    }

    /** Spans for the traced events of a batch, and the messages that carry them. */
    Batch publishing(List<OutboundMessage> messages) {
        List<OutboundMessage> traced = new ArrayList<>(messages.size());
        Map<String, Span> spans = new HashMap<>();
        for (OutboundMessage message : messages) {
            Object traceparent = message.properties().getHeaders().get(MessageHeaders.TRACEPARENT);
            if (traceparent == null) {
                traced.add(message);
                continue;
            }
            Context parent = W3C.extract(Context.root(), traceparent.toString(), TRACEPARENT);
            Span span = tracer.spanBuilder(message.exchange() + " publish").setSpanKind(SpanKind.PRODUCER).setParent(parent)
                    .setAttribute("messaging.system", "rabbitmq")
                    .setAttribute("messaging.operation.type", "send")
                    .setAttribute("messaging.destination.name", message.exchange())
                    .setAttribute("messaging.rabbitmq.destination.routing_key", message.routingKey())
                    .setAttribute("messaging.message.id", message.eventId())
                    .startSpan();
            Map<String, String> carrier = new HashMap<>();
            W3C.inject(parent.with(span), carrier, Map::put);
            spans.put(message.eventId(), span);
            traced.add(message.withTraceparent(carrier.getOrDefault(MessageHeaders.TRACEPARENT, traceparent.toString())));
        }
        return new Batch(traced, spans);
    }

    /** The spans of one batch: ended once the batch is confirmed whole, or has failed for good. */
    record Batch(List<OutboundMessage> messages, Map<String, Span> spans) {

        void attemptFailed(Exception failure) {
            spans.values().forEach(span -> span.addEvent("publish attempt failed",
                    Attributes.of(AttributeKey.stringKey("reason"), String.valueOf(failure.getMessage()))));
        }

        void confirmed(List<BatchConfirms.Returned> parked) {
            for (BatchConfirms.Returned returned : parked) {
                Span span = spans.get(returned.message().eventId());
                if (span != null) {
                    span.setAttribute("outbox.relay.parked", returned.reason());
                }
            }
            spans.values().forEach(Span::end);
        }

        void failed(Exception failure) {
            spans.values().forEach(span -> {
                span.recordException(failure);
                span.setStatus(StatusCode.ERROR, "not confirmed; republished from the last committed offset");
                span.end();
            });
        }
    }
}
