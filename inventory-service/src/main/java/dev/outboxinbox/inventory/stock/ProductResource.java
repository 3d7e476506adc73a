package dev.outboxinbox.inventory.stock;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.UUID;
import org.jboss.resteasy.reactive.RestPath;

@Produces(MediaType.APPLICATION_JSON)
@Path("/")
public class ProductResource {

    public record ProductView(String sku, String name, int onHand, int reserved, int available) {
    }

    public record ReservationView(UUID orderId, OrderOutcome.Status status, String reason, List<Line> lines) {
        public record Line(String sku, int quantity) {
        }
    }

    @GET
    @Path("products/{sku}")
    public ProductView product(@RestPath String sku) {
        Product product = Product.<Product>findByIdOptional(sku)
                .orElseThrow(() -> new NotFoundException("No product with SKU " + sku));
        return new ProductView(product.sku, product.name, product.onHand, product.reserved, product.onHand - product.reserved);
    }

    @GET
    @Path("orders/{orderId}/reservation")
    public ReservationView reservation(@RestPath UUID orderId) {
        OrderOutcome outcome = OrderOutcome.<OrderOutcome>findByIdOptional(orderId)
                .orElseThrow(() -> new NotFoundException("No event for order " + orderId + " has been processed"));
        @SuppressWarnings("unchecked")
        List<Object[]> lines = OrderOutcome.getEntityManager()
                .createNativeQuery("SELECT sku, quantity FROM reservations WHERE order_id = ?1 ORDER BY sku")
                .setParameter(1, orderId).getResultList();
        return new ReservationView(orderId, outcome.status, outcome.reason,
                lines.stream().map(row -> new ReservationView.Line((String) row[0], ((Number) row[1]).intValue())).toList());
    }
}
