package dev.outboxinbox.order.api;

import static dev.outboxinbox.events.OrderCreated.ID_CHARACTERS;
import static dev.outboxinbox.events.OrderCreated.MAX_ID_LENGTH;
import static dev.outboxinbox.events.OrderCreated.MAX_LINES;
import static dev.outboxinbox.events.OrderCreated.MAX_QUANTITY;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/** The body of {@code POST /orders}. Its bounds are the event contract's, so a valid request always makes a valid event. */
public record PlaceOrderRequest(
        @NotBlank @Size(max = MAX_ID_LENGTH) @Pattern(regexp = ID_CHARACTERS, message = CONTROL_CHARACTERS) String customerId,
        @NotNull @Size(min = 1, max = MAX_LINES) List<@NotNull @Valid Line> lines) {

    static final String CONTROL_CHARACTERS = "must not contain control characters";

    @Schema(name = "PlaceOrderLine")
    public record Line(
            @NotBlank @Size(max = MAX_ID_LENGTH) @Pattern(regexp = ID_CHARACTERS, message = CONTROL_CHARACTERS) String sku,
            @NotNull @Min(1) @Max(MAX_QUANTITY) Integer quantity) {
    }
}
