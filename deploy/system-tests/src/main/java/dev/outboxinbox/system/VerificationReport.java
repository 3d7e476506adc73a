package dev.outboxinbox.system;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.List;
import java.util.Map;

/**
 * What a run came to. {@link #passed()} only if there is no violation at all: no lost order or
 * event, no duplicate effect, no phantom, nothing reordered, stock conserved, and convergence within the bound.
 *
 * @param requests            orders requested through HTTP, by final result (OK, FAILED, UNKNOWN)
 * @param committedOrders     orders in order-service's database
 * @param eventsPublished     outbox rows: events the relay must deliver at least once (or park, if the run refused them)
 * @param eventsByType        the outbox rows by type (OrderCreated, OrderCancelled, and those written for a refused exchange)
 * @param eventsInInbox       distinct event ids inventory-service recorded (each took effect once)
 * @param ordersDecided       orders order-service moved out of PENDING on inventory's reply, by status (CONFIRMED, REJECTED)
 * @param repliesInInbox      distinct reply ids order-service recorded (each took effect once)
 * @param duplicatesAbsorbed  deliveries the inbox recognised as already seen (from inventory's log or metrics)
 * @param duplicateEffects    orders whose effect was applied more than once (or a SKU reserved beyond its orders)
 * @param lost                committed orders with no outcome in inventory, plus acknowledged orders that do not exist
 * @param phantoms            effects without a committed order, and failed requests that committed
 * @param reordered           orders whose events took effect out of order: inventory's tombstone (the cancellation
 *                            before the OrderCreated) or order-service taking the decision after the release
 * @param cancels             cancels the load sent, by what the client was told (ACKNOWLEDGED, REJECTED = 409, FAILED, UNKNOWN)
 * @param cancelsRequested    orders order-service took a cancel for (cancel_requested_at set)
 * @param cancellationsApplied cancellations inventory applied (its cancellations rows)
 * @param stock               per SKU: on hand before and after, reserved, what the live orders add up to, released
 * @param deadLetters         messages in the dead-letter queue; {@code expectedDeadLetters} were injected as poison
 * @param parked              distinct events in the relay's parking queue; {@code expectedParked} were refused on purpose
 * @param convergedMillis     time from the end of the load until everything was delivered and settled, or -1
 * @param faults              the faults injected, in order (chaos runs)
 * @param violations          each broken rule, with up to ten examples
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record VerificationReport(Map<String, Long> requests, long committedOrders, long eventsPublished, Map<String, Long> eventsByType,
                                 long eventsInInbox, Map<String, Long> ordersDecided, long repliesInInbox, Long duplicatesAbsorbed,
                                 long duplicateEffects, long lost, long phantoms, long reordered,
                                 Map<String, Long> cancels, long cancelsRequested, long cancellationsApplied, Map<String, Stock> stock,
                                 long deadLetters, long expectedDeadLetters, long parked, long expectedParked,
                                 long deliveredMillis, long convergedMillis, long convergenceBoundMillis,
                                 List<String> faults, List<String> violations) {

    /**
     * One SKU's stock after the run.
     * @param initialOnHand        on hand before the run (null: not given to the verifier)
     * @param reservedByLiveOrders what its reserved, not cancelled, orders ordered: {@code reserved} must equal it
     * @param released             what cancelled orders gave back
     */
    public record Stock(Integer initialOnHand, Integer onHand, int reserved, int reservedByLiveOrders, int released) {
        @Override
        public String toString() {
            return "on hand " + onHand + (initialOnHand == null ? "" : " (before: " + initialOnHand + ")") + ", reserved " + reserved
                    + " (live orders: " + reservedByLiveOrders + "), released " + released;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public boolean passed() {
        return violations.isEmpty();
    }

    public VerificationReport withFaults(List<String> injected) {
        return new VerificationReport(requests, committedOrders, eventsPublished, eventsByType, eventsInInbox, ordersDecided, repliesInInbox,
                duplicatesAbsorbed, duplicateEffects, lost, phantoms, reordered, cancels, cancelsRequested, cancellationsApplied, stock,
                deadLetters, expectedDeadLetters, parked, expectedParked, deliveredMillis, convergedMillis, convergenceBoundMillis,
                List.copyOf(injected), violations);
    }

    public String toJson() {
        try {
            return JSON.writeValueAsString(this);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The report with more top-level fields beside it (a harness's own figures). */
    public String toJson(Map<String, Object> extra) {
        try {
            Map<String, Object> fields = new java.util.LinkedHashMap<>(JSON.convertValue(this, Map.class));
            fields.putAll(extra);
            return JSON.writeValueAsString(fields);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    public String toText() {
        StringBuilder text = new StringBuilder();
        text.append("requests             ").append(requests).append('\n');
        text.append("committed orders     ").append(committedOrders).append('\n');
        text.append("events published     ").append(eventsPublished).append(' ').append(eventsByType).append('\n');
        text.append("events in inbox      ").append(eventsInInbox).append('\n');
        text.append("orders decided       ").append(ordersDecided).append(" (by inventory's replies, in order-service)\n");
        text.append("replies in inbox     ").append(repliesInInbox).append('\n');
        text.append("duplicates absorbed  ").append(duplicatesAbsorbed == null ? "n/a" : duplicatesAbsorbed).append('\n');
        text.append("duplicate effects    ").append(duplicateEffects).append('\n');
        text.append("lost                 ").append(lost).append('\n');
        text.append("phantoms             ").append(phantoms).append('\n');
        text.append("reordered            ").append(reordered).append('\n');
        text.append("cancels sent         ").append(cancels).append(" (ACKNOWLEDGED, REJECTED = 409, FAILED, UNKNOWN)\n");
        text.append("cancels requested    ").append(cancelsRequested).append(" (taken by order-service), applied in inventory: ")
                .append(cancellationsApplied).append('\n');
        stock.forEach((sku, figures) -> text.append("stock  ").append("%-14s".formatted(sku)).append(figures).append('\n'));
        text.append("dead letters         ").append(deadLetters).append(" (injected poison: ").append(expectedDeadLetters).append(")\n");
        text.append("parked by the relay  ").append(parked).append(" (refused on purpose: ").append(expectedParked).append(")\n");
        text.append("time to deliver      ").append(deliveredMillis < 0 ? "NOT DELIVERED" : deliveredMillis + " ms").append('\n');
        text.append("time to converge     ").append(convergedMillis < 0 ? "NOT CONVERGED" : convergedMillis + " ms")
                .append(" (bound ").append(convergenceBoundMillis).append(" ms)\n");
        if (faults != null) {
            text.append("faults injected      ").append(faults.size()).append('\n');
            faults.forEach(f -> text.append("  ").append(f).append('\n'));
        }
        text.append(passed() ? "PASSED: no violation\n" : "FAILED: " + violations.size() + " violation(s)\n");
        violations.forEach(v -> text.append("  - ").append(v).append('\n'));
        return text.toString();
    }
}
