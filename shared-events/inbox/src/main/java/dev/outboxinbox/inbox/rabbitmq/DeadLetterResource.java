package dev.outboxinbox.inbox.rabbitmq;

import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The dead-letter queue for people: what is parked and why, and, once the cause is fixed, a way to
 * send one message ({@code ?messageId=…}) or all of them back (deploy/redeliver-dead-letters).
 * Behind a door: the list (it shows payloads) and the re-drive need the role {@value #OPERATOR}, the
 * summary (a count, ids and reasons) the role {@value #MONITOR}; who holds them is the service's
 * configuration (its identity provider). The service's
 * OpenAPI document describes them; their errors refer to its {@code Problem} schema.
 */
@Path("/dead-letters")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "Dead letters", description = "Operations: the inbox's dead-letter queue, behind the operator and monitor roles")
@APIResponse(responseCode = "400", description = "No such channel, or none named where the service reads several",
        content = @Content(mediaType = "application/problem+json", schema = @Schema(ref = "Problem")))
@APIResponse(responseCode = "401", description = "No credential, or a wrong one",
        content = @Content(mediaType = "application/problem+json", schema = @Schema(ref = "Problem")))
@APIResponse(responseCode = "403", description = "A credential without the role this endpoint needs",
        content = @Content(mediaType = "application/problem+json", schema = @Schema(ref = "Problem")))
@APIResponse(responseCode = "500", description = "The broker could not be read (nothing was moved)",
        content = @Content(mediaType = "application/problem+json", schema = @Schema(ref = "Problem")))
public class DeadLetterResource {

    /** Reads the dead letters whole and sends them back (this system's contract names the same: OperationsRoles). */
    public static final String OPERATOR = "operator";
    /** Reads how many wait and why, never a payload. */
    public static final String MONITOR = "monitor";

    private static final String CHANNEL = "The inbox channel whose dead letters these are; may be left out where the"
            + " service reads one";

    private final InboxConsumers consumers;
    private final RecentDeadLetters recent;

    DeadLetterResource(InboxConsumers consumers, RecentDeadLetters recent) {
        this.consumers = consumers;
        this.recent = recent;
    }

    /** How the dead-letter queue stands, for a page that looks often: its depth, and what this process parked lately and why. */
    public record Summary(String queue, long depth, List<RecentDeadLetters.Parked> recent) {
    }

    /** The message ids sent back to the queue. */
    public record Redelivered(List<String> redelivered) {
    }

    /** Touches no message (unlike {@code GET /dead-letters}, which takes each and writes it back): safe to poll. */
    @GET
    @Path("/summary")
    @RolesAllowed(MONITOR)
    @Operation(operationId = "deadLetterSummary", summary = "How many dead letters wait, and what this process parked lately and why")
    @APIResponse(responseCode = "200", description = "The queue, its depth and the recent ones",
            content = @Content(schema = @Schema(implementation = Summary.class)))
    public Summary summary(@QueryParam("channel") @Parameter(description = CHANNEL) String channel) throws Exception {
        DeadLetterRedelivery redelivery = deadLetters(channel);
        return new Summary(redelivery.deadLetterQueue(), redelivery.depth(), recent.list(redelivery.queue()));
    }

    @GET
    @RolesAllowed(OPERATOR)
    @Operation(operationId = "listDeadLetters", summary = "Every dead letter with its reason, oldest first (leaves them in place)")
    @APIResponse(responseCode = "200", description = "The dead letters",
            content = @Content(schema = @Schema(type = SchemaType.ARRAY,
                    implementation = DeadLetterRedelivery.DeadLetter.class)))
    public List<DeadLetterRedelivery.DeadLetter> list(@QueryParam("channel") @Parameter(description = CHANNEL) String channel)
            throws Exception {
        return deadLetters(channel).list();
    }

    @POST
    @Path("/redeliver")
    @RolesAllowed(OPERATOR)
    @Operation(operationId = "redeliverDeadLetters",
            summary = "Send dead letters back to the queue: one (messageId), those whose reason contains a text (reason), or all")
    @APIResponse(responseCode = "200", description = "What was sent back",
            content = @Content(schema = @Schema(implementation = Redelivered.class)))
    public Redelivered redeliver(@QueryParam("channel") @Parameter(description = CHANNEL) String channel,
                                 @QueryParam("messageId") String messageId,
                                 @QueryParam("reason") @Parameter(description = "Only the dead letters whose reason contains this text,"
                                         + " e.g. 'newer than this consumer reads' once the consumer reads the new version") String reason)
            throws Exception {
        return new Redelivered(deadLetters(channel).redeliver(Optional.ofNullable(messageId).filter(id -> !id.isBlank()),
                Optional.ofNullable(reason).filter(text -> !text.isBlank())));
    }

    private DeadLetterRedelivery deadLetters(String channel) {
        try {
            return consumers.deadLetters(channel);
        } catch (IllegalArgumentException e) {
            throw new BadRequestException(e.getMessage());
        }
    }
}
