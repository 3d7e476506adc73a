package dev.outboxinbox.relay;

import dev.outboxinbox.events.OperationsRoles;
import io.quarkus.logging.Log;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.ForbiddenException;
import io.quarkus.security.UnauthorizedException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import java.util.List;
import java.util.Map;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** The relay's HTTP errors as RFC 9457 problem documents, as in the other two services. */
public class ProblemMapper {

    /** The operations endpoints' door (application.properties, "Operations behind a door"): who, or which role. */
    @ServerExceptionMapper({UnauthorizedException.class, AuthenticationFailedException.class, ForbiddenException.class})
    public Response refused(RuntimeException e) {
        return e instanceof ForbiddenException ? problem(403, "Forbidden", OperationsRoles.FORBIDDEN)
                : Response.fromResponse(problem(401, "Unauthorized", OperationsRoles.UNAUTHORIZED))
                        .header("WWW-Authenticate", OperationsRoles.CHALLENGE).build();
    }

    @ServerExceptionMapper
    public Response http(WebApplicationException e) {
        Response.StatusType status = e.getResponse().getStatusInfo();
        return problem(status.getStatusCode(), status.getReasonPhrase(), e.getMessage());
    }

    @ServerExceptionMapper
    public Response unexpected(Exception e) {
        Log.error("Request failed", e);
        return problem(500, "Internal error", "The request failed: " + e.getMessage());
    }

    static Response problem(int status, String title, String detail) {
        return Response.status(status).type("application/problem+json").entity(Map.of(
                "type", "about:blank", "title", title, "status", status, "detail", detail, "errors", List.of())).build();
    }
}
