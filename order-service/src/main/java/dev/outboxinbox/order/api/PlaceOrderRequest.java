package dev.outboxinbox.order.api;

import static dev.outboxinbox.events.OrderCreated.CURRENCY_CODE;
import static dev.outboxinbox.events.OrderCreated.ID_CHARACTERS;
import static dev.outboxinbox.events.OrderCreated.MAX_ID_LENGTH;
import static dev.outboxinbox.events.OrderCreated.MAX_LINES;
import static dev.outboxinbox.events.OrderCreated.MAX_QUANTITY;
import static dev.outboxinbox.events.OrderCreated.PRICE_FRACTION_DIGITS;
import static dev.outboxinbox.events.OrderCreated.PRICE_INTEGER_DIGITS;

import dev.outboxinbox.events.OrderCreated;
import jakarta.validation.Valid;
import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Digits;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import java.math.BigDecimal;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * The body of {@code POST /orders}. Its bounds are the event contract's, so a valid request always makes a valid event.
 * Currency and prices came with OrderCreated v2; both may be left out, so a client written before them still works.
 */
public record PlaceOrderRequest(
        @NotBlank @Size(max = MAX_ID_LENGTH) @Pattern(regexp = ID_CHARACTERS, message = CONTROL_CHARACTERS) String customerId,
        @Pattern(regexp = CURRENCY_CODE, message = "must be an ISO 4217 code: three capital letters")
        @Schema(description = "ISO 4217 code of the unit prices", defaultValue = OrderCreated.DEFAULT_CURRENCY, example = "EUR")
        String currency,
        @NotNull @Size(min = 1, max = MAX_LINES) List<@NotNull @Valid Line> lines) {

    static final String CONTROL_CHARACTERS = "must not contain control characters";

    /** The currency asked for, or {@value OrderCreated#DEFAULT_CURRENCY}. */
    String currencyOrDefault() {
        return currency == null ? OrderCreated.DEFAULT_CURRENCY : currency;
    }

    @Schema(name = "PlaceOrderLine")
    public record Line(
            @NotBlank @Size(max = MAX_ID_LENGTH) @Pattern(regexp = ID_CHARACTERS, message = CONTROL_CHARACTERS) String sku,
            @NotNull @Min(1) @Max(MAX_QUANTITY) Integer quantity,
            @DecimalMin("0") @Digits(integer = PRICE_INTEGER_DIGITS, fraction = PRICE_FRACTION_DIGITS)
            @Schema(description = "What one unit costs, in the order's currency (optional)", example = "12.50")
            BigDecimal unitPrice) {
    }
}
