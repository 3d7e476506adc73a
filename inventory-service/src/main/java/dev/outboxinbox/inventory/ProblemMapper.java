package dev.outboxinbox.inventory;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.outboxinbox.events.OperationsRoles;
import io.quarkus.logging.Log;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.ForbiddenException;
import io.quarkus.security.UnauthorizedException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** HTTP errors as RFC 9457 problem documents. */
public class ProblemMapper {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @Schema(name = "Problem", description = "RFC 9457 problem details")
    public record Problem(String type, String title, int status, String detail) {
    }

    /** The operations endpoints' door (application.properties, "Operations behind a door"): who, or which role. */
    @ServerExceptionMapper({UnauthorizedException.class, AuthenticationFailedException.class, ForbiddenException.class})
    public Response refused(RuntimeException e) {
        return e instanceof ForbiddenException ? problem(403, "Forbidden", OperationsRoles.FORBIDDEN)
                : Response.fromResponse(problem(401, "Unauthorized", OperationsRoles.UNAUTHORIZED))
                        .header("WWW-Authenticate", OperationsRoles.CHALLENGE).build();
    }

    @ServerExceptionMapper
    public Response http(WebApplicationException e) {
        int status = e.getResponse().getStatus();
        return problem(status, e.getResponse().getStatusInfo().getReasonPhrase(), e.getMessage());
    }

    /** Anything else is ours (the broker or the database away, a bug): logged whole, said plainly. */
    @ServerExceptionMapper
    public Response unexpected(Exception e) {
        Log.error("Request failed", e);
        return problem(500, "Internal error", "The request failed: " + e.getMessage());
    }

    private static Response problem(int status, String title, String detail) {
        return Response.status(status).type(new MediaType("application", "problem+json"))
                .entity(new Problem("about:blank", title, status, detail)).build();
    }
}
