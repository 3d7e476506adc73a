package dev.outboxinbox.order.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/** An RFC 9457 problem document. {@code errors} names each offending field of a bad request. */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
@Schema(name = "Problem", description = "RFC 9457 problem details; errors names each offending field of a bad request")
public record Problem(String type, String title, int status, String detail, List<FieldError> errors) {

    public static final String MEDIA_TYPE_NAME = "application/problem+json";
    public static final MediaType MEDIA_TYPE = MediaType.valueOf(MEDIA_TYPE_NAME);

    public record FieldError(String field, String message) {
    }

    public static Response response(int status, String title, String detail, List<FieldError> errors) {
        Problem problem = new Problem("about:blank", title, status, detail, errors);
        return Response.status(status).type(MEDIA_TYPE).entity(problem).build();
    }

    public static Response response(int status, String title, String detail) {
        return response(status, title, detail, List.of());
    }
}
