package dev.outboxinbox.order.domain;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/** An order as the API shows it: a snapshot taken inside the transaction, never the entity itself. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record OrderView(UUID id, String customerId, List<Line> lines, Instant placedAt, OrderStatus status,
                        String statusReason, Instant decidedAt, Instant cancelRequestedAt, Instant cancelledAt) {

    @Schema(name = "OrderLine")
    public record Line(String sku, int quantity) {
    }

    static OrderView of(Order order) {
        return new OrderView(order.id, order.customerId,
                order.lines.stream().map(line -> new Line(line.sku, line.quantity)).toList(), order.placedAt,
                order.status, order.statusReason, order.decidedAt, order.cancelRequestedAt, order.cancelledAt);
    }
}
