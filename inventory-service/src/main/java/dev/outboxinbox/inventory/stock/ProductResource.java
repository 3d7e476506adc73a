package dev.outboxinbox.inventory.stock;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.ProblemMapper;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.headers.Header;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.security.SecurityRequirementsSet;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.RestPath;
import org.jboss.resteasy.reactive.RestQuery;

@Produces(MediaType.APPLICATION_JSON)
@Path("/")
@Tag(name = "Stock", description = "The catalogue, its stock, and what each order reserved and released")
@SecurityRequirementsSet // the business API asks for no credential (only the operations endpoints do)
@APIResponse(responseCode = "406", description = "The Accept header names no type this answers in (it answers JSON)",
        content = @Content(mediaType = "application/problem+json", schema = @Schema(implementation = ProblemMapper.Problem.class)))
public class ProductResource {

    @Schema(name = "Product")
    public record ProductView(String sku, String name, int onHand, int reserved, int available) {
    }

    /**
     * @param lines       what the order reserved (kept after a cancellation, as history)
     * @param cancelledAt when its cancellation was applied, or null
     * @param released    what the cancellation gave back (empty when nothing was reserved, or not cancelled)
     */
    @Schema(name = "Reservation")
    public record ReservationView(UUID orderId, OrderOutcome.Status status, String reason, List<Line> lines, Instant cancelledAt,
                                  List<Line> released) {
        public record Line(String sku, int quantity) {
        }
    }

    /** The longest page of {@code GET /products}, and the page it gives when none is asked for. */
    static final int MAX_PAGE = 500;
    static final int DEFAULT_PAGE = 100;
    private static final Pattern ID_CHARACTERS = Pattern.compile(OrderCreated.ID_CHARACTERS);

    /**
     * The catalogue, by SKU, a page at a time: {@code ?after=<last SKU of the previous page>&limit=N}.
     * A full page carries a {@code Link: <…>; rel="next"} header to the next one.
     */
    @GET
    @Path("products")
    @Operation(operationId = "listProducts", summary = "The catalogue, by SKU, a page at a time")
    @APIResponse(responseCode = "200", description = "A page of the catalogue, by SKU",
            headers = @Header(name = "Link", description = "rel=\"next\": the next page, when this one is full",
                    schema = @Schema(type = SchemaType.STRING)),
            content = @Content(schema = @Schema(type = SchemaType.ARRAY, implementation = ProductView.class)))
    @APIResponse(responseCode = "400", description = "limit is not 1 to 500, or after is not a SKU",
            content = @Content(mediaType = "application/problem+json", schema = @Schema(implementation = ProblemMapper.Problem.class)))
    public Response products(@RestQuery String after, @RestQuery @DefaultValue("" + DEFAULT_PAGE) String limit,
            @Context UriInfo uri) {
        // Text, parsed here: JAX-RS answers a query parameter it cannot convert with a 404, which misleads.
        int size = limit.matches("[0-9]{1,4}") ? Integer.parseInt(limit) : -1;
        if (size < 1 || size > MAX_PAGE) {
            throw new BadRequestException("limit must be a whole number from 1 to " + MAX_PAGE + ", not " + limit);
        }
        if (after != null && !isSku(after)) {
            throw new BadRequestException("after must be a SKU: at most " + OrderCreated.MAX_ID_LENGTH
                    + " characters, no control characters");
        }
        List<Product> page = (after == null
                ? Product.<Product>find("order by sku")
                : Product.<Product>find("sku > ?1 order by sku", after)).page(0, size).list();
        Response.ResponseBuilder response = Response.ok(page.stream().map(ProductResource::view).toList());
        if (page.size() == size) {
            response.link(uri.getRequestUriBuilder().replaceQueryParam("after", page.get(page.size() - 1).sku)
                    .replaceQueryParam("limit", size).build(), "next");
        }
        return response.build();
    }

    @GET
    @Path("products/{sku}")
    @Operation(operationId = "getProduct", summary = "A product and its stock: on hand, reserved, available")
    @APIResponse(responseCode = "200", description = "The product",
            content = @Content(schema = @Schema(implementation = ProductView.class)))
    @APIResponse(responseCode = "404", description = "No product with this SKU",
            content = @Content(mediaType = "application/problem+json", schema = @Schema(implementation = ProblemMapper.Problem.class)))
    public ProductView product(@RestPath String sku) {
        // A SKU is at most 64 characters without control characters (the contract's rule): anything else
        // names no product, and PostgreSQL would refuse a NUL in the query outright.
        Product product = (isSku(sku) ? Product.<Product>findByIdOptional(sku) : Optional.<Product>empty())
                .orElseThrow(() -> new NotFoundException("No product with SKU " + sku));
        return view(product);
    }

    private static boolean isSku(String text) {
        return text.length() <= OrderCreated.MAX_ID_LENGTH && ID_CHARACTERS.matcher(text).matches();
    }

    private static ProductView view(Product product) {
        return new ProductView(product.sku, product.name, product.onHand, product.reserved, product.onHand - product.reserved);
    }

    @GET
    @Path("orders/{orderId}/reservation")
    @Operation(operationId = "getReservation", summary = "What inventory decided for an order, what it reserved and what a cancellation released")
    @APIResponse(responseCode = "200", description = "The order's outcome",
            content = @Content(schema = @Schema(implementation = ReservationView.class)))
    @APIResponse(responseCode = "404", description = "No event of this order processed yet (or the id is not a UUID)",
            content = @Content(mediaType = "application/problem+json", schema = @Schema(implementation = ProblemMapper.Problem.class)))
    public ReservationView reservation(@RestPath UUID orderId) {
        OrderOutcome outcome = OrderOutcome.<OrderOutcome>findByIdOptional(orderId)
                .orElseThrow(() -> new NotFoundException("No event for order " + orderId + " has been processed"));
        List<?> cancelled = OrderOutcome.getEntityManager()
                .createNativeQuery("SELECT cancelled_at FROM cancellations WHERE order_id = ?1")
                .setParameter(1, orderId).getResultList();
        return new ReservationView(orderId, outcome.status, outcome.reason, lines("reservations", orderId),
                cancelled.isEmpty() ? null : instant(cancelled.get(0)), lines("releases", orderId));
    }

    private static List<ReservationView.Line> lines(String table, UUID orderId) {
        @SuppressWarnings("unchecked")
        List<Object[]> rows = OrderOutcome.getEntityManager()
                .createNativeQuery("SELECT sku, quantity FROM " + table + " WHERE order_id = ?1 ORDER BY sku")
                .setParameter(1, orderId).getResultList();
        return rows.stream().map(row -> new ReservationView.Line((String) row[0], ((Number) row[1]).intValue())).toList();
    }

    private static Instant instant(Object value) {
        if (value instanceof java.time.OffsetDateTime time) {
            return time.toInstant();
        }
        return value instanceof java.sql.Timestamp time ? time.toInstant() : (Instant) value;
    }
}
