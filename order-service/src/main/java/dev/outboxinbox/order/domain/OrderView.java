package dev.outboxinbox.order.domain;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/** An order as the API shows it: a snapshot taken inside the transaction, never the entity itself. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record OrderView(UUID id, String customerId, String currency, List<Line> lines, Instant placedAt, OrderStatus status,
                        String statusReason, Instant decidedAt, Instant cancelRequestedAt, Instant cancelledAt) {

    @Schema(name = "OrderLine")
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Line(String sku, int quantity, @Schema(description = "Absent when the order gave no price") BigDecimal unitPrice) {
    }

    static OrderView of(Order order) {
        return new OrderView(order.id, order.customerId, order.currency,
                order.lines.stream().map(line -> new Line(line.sku, line.quantity, line.unitPrice)).toList(), order.placedAt,
                order.status, order.statusReason, order.decidedAt, order.cancelRequestedAt, order.cancelledAt);
    }
}
