package dev.outboxinbox.relay;

import io.quarkus.logging.Log;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import java.util.List;
import java.util.Map;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** The relay's HTTP errors as RFC 9457 problem documents, as in the other two services. */
public class ProblemMapper {

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
