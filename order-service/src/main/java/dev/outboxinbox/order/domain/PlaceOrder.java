package dev.outboxinbox.order.domain;

import dev.outboxinbox.events.OrderCreated;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * The command to place an order, already validated at the edge.
 *
 * @param currency       ISO 4217; {@value OrderCreated#DEFAULT_CURRENCY} when the client named none
 * @param idempotencyKey the client's {@code Idempotency-Key}, if it sent one
 * @param traceparent    the W3C trace context of the request, carried into the outbox
 */
public record PlaceOrder(String customerId, String currency, List<OrderLine> lines, Optional<String> idempotencyKey,
                         Optional<String> traceparent) {

    public PlaceOrder {
        lines = List.copyOf(lines);
    }

    /**
     * What must be equal for a retry with the same key to count as the same request: every field,
     * each prefixed with its length, so that no customerId or SKU, whatever characters it holds, can
     * make one request encode like another. The currency and a line's price count only when given (not
     * the default, not absent), so a key sent before they existed still fingerprints as it did.
     */
    String fingerprint() {
        StringBuilder canonical = new StringBuilder();
        field(canonical, customerId);
        canonical.append(lines.size()).append(';');
        lines.forEach(line -> {
            field(canonical, line.sku);
            canonical.append(line.quantity).append(';');
            if (line.unitPrice != null) {
                // 12.5 and 12.50 are the same price.
                canonical.append("price:").append(line.unitPrice.stripTrailingZeros().toPlainString()).append(';');
            }
        });
        if (!currency.equals(OrderCreated.DEFAULT_CURRENCY)) {
            field(canonical, "currency:" + currency);
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(canonical.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("Every Java platform has SHA-256", e);
        }
    }

    private static void field(StringBuilder canonical, String value) {
        canonical.append(value.length()).append(':').append(value);
    }
}
