package dev.outboxinbox.order.domain;

import jakarta.persistence.Column;
import jakarta.persistence.Embeddable;
import java.math.BigDecimal;

@Embeddable
public class OrderLine {

    @Column(nullable = false)
    public String sku;

    @Column(nullable = false)
    public int quantity;

    /** In the order's currency; null when the client gave no price. */
    @Column(name = "unit_price", precision = 12, scale = 2)
    public BigDecimal unitPrice;

    protected OrderLine() {
    }

    public OrderLine(String sku, int quantity, BigDecimal unitPrice) {
        this.sku = sku;
        this.quantity = quantity;
        this.unitPrice = unitPrice;
    }
}
