package dev.outboxinbox.order.api;

import dev.outboxinbox.order.domain.CancelledOrder;
import dev.outboxinbox.order.domain.OrderLine;
import dev.outboxinbox.order.domain.OrderService;
import dev.outboxinbox.order.domain.OrderStatus;
import dev.outboxinbox.order.domain.OrderView;
import dev.outboxinbox.order.domain.PlaceOrder;
import dev.outboxinbox.order.domain.PlacedOrder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.ParameterIn;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.headers.Header;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.security.SecurityRequirementsSet;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.RestPath;

@Path("/orders")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "Orders", description = "Place, read and cancel orders")
@SecurityRequirementsSet // the business API asks for no credential (only the operations endpoints do)
@APIResponse(responseCode = "406", description = "The Accept header names no type this answers in (it answers JSON)",
        content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
@APIResponse(responseCode = "503", description = "Nothing was done: no database connection (every one busy for the pool's"
        + " acquisition timeout, or the database unreachable); try again after Retry-After seconds",
        headers = @Header(name = "Retry-After", description = "Seconds to wait before trying again",
                schema = @Schema(type = SchemaType.INTEGER)),
        content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
public class OrderResource {

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    static final String TRACEPARENT_HEADER = "traceparent";
    static final String IDEMPOTENT_REPLAYED = "Idempotent-Replayed";
    private static final int MAX_IDEMPOTENCY_KEY_LENGTH = 255;
    /** W3C trace context, version 00. A malformed one is dropped, as the spec asks, not rejected. */
    private static final Pattern TRACEPARENT = Pattern.compile("00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}");

    private final OrderService orders;
    private final OrderMetrics metrics;

    OrderResource(OrderService orders, OrderMetrics metrics) {
        this.orders = orders;
        this.metrics = metrics;
    }

    /**
     * Places an order. A retry with the same {@code Idempotency-Key} and body gets the same
     * response and creates nothing; the same key with another body is a {@code 422}.
     */
    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(operationId = "placeOrder", summary = "Place an order (its OrderCreated event in the same transaction)")
    @Parameter(name = IDEMPOTENCY_KEY, in = ParameterIn.HEADER,
            description = "Makes a retry safe: the same key and body answer the same order, never a second one",
            schema = @Schema(type = SchemaType.STRING, maxLength = MAX_IDEMPOTENCY_KEY_LENGTH))
    @APIResponse(responseCode = "201", description = "Placed, or a replay of the same key and body (Idempotent-Replayed says which)",
            headers = {@Header(name = "Location", description = "The order's address", schema = @Schema(type = SchemaType.STRING)),
                    @Header(name = IDEMPOTENT_REPLAYED, description = "true when an earlier request with this key placed it",
                            schema = @Schema(type = SchemaType.BOOLEAN))},
            content = @Content(schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "400", description = "The body is not JSON, or names an invalid field (each in errors)",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    @APIResponse(responseCode = "415", description = "The body is not application/json",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    @APIResponse(responseCode = "422", description = "The Idempotency-Key was used with another body",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    @APIResponse(responseCode = "500", description = "Failed; whether the order was placed is unknown: retry with the same Idempotency-Key",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    public Response place(@NotNull(message = "a JSON body is required") @Valid PlaceOrderRequest request,
                          HttpHeaders headers,
                          UriInfo uri) {
        rejectDuplicateSkus(request.lines());
        PlacedOrder placed = orders.place(new PlaceOrder(request.customerId(), request.currencyOrDefault(),
                request.lines().stream().map(line -> new OrderLine(line.sku(), line.quantity(), line.unitPrice())).toList(),
                validIdempotencyKey(headers.getRequestHeader(IDEMPOTENCY_KEY)), traceparent(headers)));
        metrics.answered(placed.replayed());
        return Response.created(uri.getAbsolutePathBuilder().path(placed.order().id().toString()).build())
                .header(IDEMPOTENT_REPLAYED, placed.replayed())
                .entity(placed.order())
                .build();
    }

    @GET
    @Path("/{id}")
    @Operation(operationId = "getOrder", summary = "An order and where it stands")
    @APIResponse(responseCode = "200", description = "The order",
            content = @Content(schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "404", description = "No such order (or the id is not a UUID)",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    public OrderView get(@RestPath UUID id) {
        return orders.find(id);
    }

    /**
     * Cancels an order: inventory releases what it reserved, and the order ends CANCELLED. Idempotent,
     * no key needed (the order's id is the key): {@code 202 Accepted} with the order, CANCELLING, while
     * inventory has not answered, whether this request cancelled it or an earlier one did; {@code 200}
     * once it is CANCELLED. {@code Idempotent-Replayed: true} when an earlier request had cancelled it
     * (nothing was written). A rejected order is a {@code 409}; an unknown one a {@code 404}.
     */
    @POST
    @Path("/{id}/cancel")
    @Operation(operationId = "cancelOrder", summary = "Cancel an order (its OrderCancelled event in the same transaction); idempotent")
    @APIResponse(responseCode = "200", description = "Cancelled: inventory released what it had reserved",
            headers = @Header(name = IDEMPOTENT_REPLAYED, description = "true when an earlier request had cancelled it",
                    schema = @Schema(type = SchemaType.BOOLEAN)),
            content = @Content(schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "202", description = "Cancelling: inventory has not answered yet",
            headers = @Header(name = IDEMPOTENT_REPLAYED, description = "true when an earlier request had cancelled it",
                    schema = @Schema(type = SchemaType.BOOLEAN)),
            content = @Content(schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "404", description = "No such order (or the id is not a UUID)",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    @APIResponse(responseCode = "409", description = "The order was rejected: there is nothing to cancel",
            content = @Content(mediaType = Problem.MEDIA_TYPE_NAME, schema = @Schema(implementation = Problem.class)))
    public Response cancel(@RestPath UUID id, HttpHeaders headers) {
        CancelledOrder cancelled = orders.cancel(id, traceparent(headers));
        metrics.cancelled(cancelled.requestedNow());
        return Response.status(cancelled.order().status() == OrderStatus.CANCELLED ? Response.Status.OK : Response.Status.ACCEPTED)
                .header(IDEMPOTENT_REPLAYED, !cancelled.requestedNow())
                .entity(cancelled.order())
                .build();
    }

    /**
     * The trace the order's event continues: this request's span when tracing is on (a child of the
     * client's traceparent, if it sent one); with span export off (OTEL_SDK_DISABLED, no HTTP span is
     * made) the client's traceparent as it came, when it is well-formed.
     */
    private static Optional<String> traceparent(HttpHeaders headers) {
        SpanContext span = Span.current().getSpanContext();
        if (span.isValid()) {
            return Optional.of("00-" + span.getTraceId() + "-" + span.getSpanId() + "-" + span.getTraceFlags().asHex());
        }
        return Optional.ofNullable(headers.getHeaderString(TRACEPARENT_HEADER)).filter(value -> TRACEPARENT.matcher(value).matches());
    }

    /** Absent is fine; present but empty, repeated or oversized is a client bug worth reporting. */
    private static Optional<String> validIdempotencyKey(List<String> values) {
        if (values == null || values.isEmpty()) {
            return Optional.empty();
        }
        String key = values.get(0);
        if (values.size() > 1 || key == null || key.isBlank() || key.length() > MAX_IDEMPOTENCY_KEY_LENGTH) {
            throw new InvalidRequestException(IDEMPOTENCY_KEY,
                    "must be sent once, 1 to " + MAX_IDEMPOTENCY_KEY_LENGTH + " characters, not blank");
        }
        return Optional.of(key);
    }

    /** One line per SKU: the consumer reserves per (order, SKU), so a repeated SKU is a client error here. */
    private static void rejectDuplicateSkus(List<PlaceOrderRequest.Line> lines) {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < lines.size(); i++) {
            if (!seen.add(lines.get(i).sku())) {
                throw new InvalidRequestException("lines[" + i + "].sku",
                        "SKU " + lines.get(i).sku() + " appears on more than one line; put the total on one line");
            }
        }
    }
}
