package dev.outboxinbox.inventory;

import com.fasterxml.jackson.annotation.JsonInclude;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** HTTP errors as RFC 9457 problem documents. */
public class ProblemMapper {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Problem(String type, String title, int status, String detail) {
    }

    @ServerExceptionMapper
    public Response http(WebApplicationException e) {
        int status = e.getResponse().getStatus();
        return Response.status(status).type(new MediaType("application", "problem+json"))
                .entity(new Problem("about:blank", e.getResponse().getStatusInfo().getReasonPhrase(), status, e.getMessage()))
                .build();
    }
}
