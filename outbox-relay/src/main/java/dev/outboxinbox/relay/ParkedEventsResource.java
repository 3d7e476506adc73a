package dev.outboxinbox.relay;

import dev.outboxinbox.events.Topology;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.Map;

/**
 * The events the broker returned as unroutable, parked in {@value Topology#RELAY_PARKING_QUEUE}:
 * how many wait, and a way to send them on once a queue is bound for them. Republishing is safe to
 * repeat: an event that arrives twice is absorbed by its consumer's inbox.
 */
@Path("/")  // the root, so that every path, unknown ones too, is answered here: with a problem document
@Produces(MediaType.APPLICATION_JSON)
public class ParkedEventsResource {

    private final ConfirmingPublisher publisher;

    ParkedEventsResource(ConfirmingPublisher publisher) {
        this.publisher = publisher;
    }

    @GET
    @Path("parked")
    public Response count() {
        try {
            return Response.ok(Map.of("queue", Topology.RELAY_PARKING_QUEUE, "parked", publisher.parkedCount())).build();
        } catch (Exception e) {
            return unavailable(e);
        }
    }

    /** Every parked event back to its original exchange and routing key; the still-unroutable stay parked. */
    @POST
    @Path("parked/republish")
    public Response republish() {
        try {
            ConfirmingPublisher.Republished result = publisher.republishParked();
            return Response.ok(Map.of("republished", result.republished(), "stillParked", result.stillParked())).build();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return unavailable(e);
        } catch (Exception e) {
            return unavailable(e);
        }
    }

    private static Response unavailable(Exception e) {
        return ProblemMapper.problem(503, "Broker unavailable", "Nothing was moved: " + e.getMessage());
    }
}
