package dev.outboxinbox.inbox.rabbitmq;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The dead-letter queue for people: what is parked and why, and, once the cause is fixed, a way to
 * send one message ({@code ?messageId=…}) or all of them back (deploy/redeliver-dead-letters).
 */
@Path("/dead-letters")
@Produces(MediaType.APPLICATION_JSON)
public class DeadLetterResource {

    private final DeadLetterRedelivery redelivery;
    private final RecentDeadLetters recent;

    DeadLetterResource(DeadLetterRedelivery redelivery, RecentDeadLetters recent) {
        this.redelivery = redelivery;
        this.recent = recent;
    }

    /** How the dead-letter queue stands, for a page that looks often: its depth, and what this process parked lately and why. */
    public record Summary(String queue, long depth, List<RecentDeadLetters.Parked> recent) {
    }

    /** Touches no message (unlike {@code GET /dead-letters}, which takes each and writes it back): safe to poll. */
    @GET
    @Path("/summary")
    public Summary summary() throws Exception {
        return new Summary(redelivery.deadLetterQueue(), redelivery.depth(), recent.list());
    }

    @GET
    public List<DeadLetterRedelivery.DeadLetter> list() throws Exception {
        return redelivery.list();
    }

    @POST
    @Path("/redeliver")
    public Map<String, List<String>> redeliver(@QueryParam("messageId") String messageId) throws Exception {
        return Map.of("redelivered", redelivery.redeliver(Optional.ofNullable(messageId).filter(id -> !id.isBlank())));
    }
}
