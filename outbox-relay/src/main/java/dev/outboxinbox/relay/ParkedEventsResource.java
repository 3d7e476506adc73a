package dev.outboxinbox.relay;

import dev.outboxinbox.events.OperationsRoles;
import dev.outboxinbox.events.Topology;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.Map;

/**
 * The events the relay could not deliver, parked in {@value Topology#RELAY_PARKING_QUEUE}: the broker
 * returned them as unroutable, or refused their exchange. How many wait, the last ones with why, and
 * a way to send them on once a queue is bound or the permission granted. Republishing is safe to
 * repeat: an event that arrives twice is absorbed by its consumer's inbox. Behind a door: the count
 * and the reasons need the role {@code monitor}, the republish the role {@code operator}
 * (application.properties, "Operations behind a door").
 */
@Path("/")  // the root, so that every path, unknown ones too, is answered here: with a problem document
@Produces(MediaType.APPLICATION_JSON)
public class ParkedEventsResource {

    private final ConfirmingPublisher publisher;
    private final RelayStatus status;

    ParkedEventsResource(ConfirmingPublisher publisher, RelayStatus status) {
        this.publisher = publisher;
        this.status = status;
    }

    /**
     * The count is the broker's; {@code recent} lists the events this instance parked since it started
     * (the last {@value RelayStatus#RECENTLY_PARKED}) with the reason. The queue itself is not browsed: on
     * a quorum queue every look counts as a delivery.
     */
    @GET
    @Path("parked")
    @RolesAllowed(OperationsRoles.MONITOR)
    public Response parked() {
        try {
            return Response.ok(Map.of("queue", Topology.RELAY_PARKING_QUEUE, "parked", publisher.parkedCount(),
                    "recent", status.recentlyParked())).build();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return unavailable(e);
        } catch (Exception e) {
            return unavailable(e);
        }
    }

    /**
     * Every parked event back to its original exchange and routing key. What can go goes; each one that
     * still cannot (unroutable, or its exchange still refused) stays parked and is listed with the reason.
     */
    @POST
    @Path("parked/republish")
    @RolesAllowed(OperationsRoles.OPERATOR)
    public Response republish() {
        try {
            ConfirmingPublisher.Republished result = publisher.republishParked();
            status.republished(result.sent(), result.stillParked());
            return Response.ok(Map.of("republished", result.sent().size(),
                    "stillParked", result.stillParked().stream().map(RelayStatus.ParkedEvent::of).toList())).build();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return unavailable(e);
        } catch (Exception e) {
            return unavailable(e);
        }
    }

    private static Response unavailable(Exception e) {
        return ProblemMapper.problem(503, "Broker unavailable",
                "Nothing more was moved (what was confirmed before the failure was sent on): " + e.getMessage());
    }
}
