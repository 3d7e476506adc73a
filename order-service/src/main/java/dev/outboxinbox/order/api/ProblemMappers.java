package dev.outboxinbox.order.api;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.outboxinbox.events.OperationsRoles;
import dev.outboxinbox.order.domain.IdempotencyKeyReusedException;
import dev.outboxinbox.order.domain.OrderNotCancellableException;
import dev.outboxinbox.order.domain.OrderNotFoundException;
import dev.outboxinbox.order.domain.VersionCannotSayException;
import io.quarkus.logging.Log;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.ForbiddenException;
import io.quarkus.security.UnauthorizedException;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.ConstraintViolationException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** Every error leaves as {@code application/problem+json}; a bad request names the field. */
public class ProblemMappers {

    /** What a 503 tells the client to wait: a busy pool frees a connection within ms, a restarted database within seconds. */
    static final int RETRY_AFTER_SECONDS = 2;

    @ServerExceptionMapper
    public Response invalidBody(ConstraintViolationException e) {
        List<Problem.FieldError> errors = e.getConstraintViolations().stream()
                .map(v -> new Problem.FieldError(field(v), v.getMessage()))
                .sorted(Comparator.comparing(Problem.FieldError::field))
                .toList();
        return Problem.response(400, "Invalid request", "The request has invalid fields", errors);
    }

    /*
     * Quarkus REST maps some Jackson exceptions itself, to plain 400s; the most specific mapper
     * wins, so each subtype it knows is named here.
     */
    @ServerExceptionMapper({JsonProcessingException.class, JsonParseException.class, JsonMappingException.class,
            MismatchedInputException.class, InvalidFormatException.class})
    public Response unreadableBody(JsonProcessingException e) {
        Problem.FieldError error = isSyntaxError(e)
                ? new Problem.FieldError("body", "is not well-formed JSON" + (e.getLocation() == null ? ""
                        : " (at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")"))
                : new Problem.FieldError(e instanceof JsonMappingException mapping ? jsonPath(mapping.getPath()) : "body",
                        "has the wrong type or format");
        return Problem.response(400, "Malformed request", "The body could not be read as an order", List.of(error));
    }

    private static boolean isSyntaxError(JsonProcessingException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof JsonParseException) {
                return true;
            }
        }
        return e.getLocation() != null && !(e instanceof JsonMappingException);
    }

    @ServerExceptionMapper
    public Response invalidRequest(InvalidRequestException e) {
        return Problem.response(400, "Invalid request", e.getMessage(),
                List.of(new Problem.FieldError(e.field(), e.getMessage())));
    }

    @ServerExceptionMapper
    public Response notExpressibleYet(VersionCannotSayException e) {
        return Problem.response(400, "Not accepted yet", e.getMessage());
    }

    @ServerExceptionMapper
    public Response idempotencyKeyReused(IdempotencyKeyReusedException e) {
        return Problem.response(422, "Idempotency-Key reused", e.getMessage());
    }

    @ServerExceptionMapper
    public Response notFound(OrderNotFoundException e) {
        return Problem.response(404, "Order not found", e.getMessage());
    }

    @ServerExceptionMapper
    public Response notCancellable(OrderNotCancellableException e) {
        return Problem.response(409, "Order cannot be cancelled", e.getMessage());
    }

    /** The operations endpoints' door (application.properties, "Operations behind a door"): who, or which role. */
    @ServerExceptionMapper({UnauthorizedException.class, AuthenticationFailedException.class, ForbiddenException.class})
    public Response refused(RuntimeException e) {
        return e instanceof ForbiddenException ? Problem.response(403, "Forbidden", OperationsRoles.FORBIDDEN)
                : Response.fromResponse(Problem.response(401, "Unauthorized", OperationsRoles.UNAUTHORIZED))
                        .header("WWW-Authenticate", OperationsRoles.CHALLENGE).build();
    }

    @ServerExceptionMapper
    public Response http(WebApplicationException e) {
        if (e.getCause() instanceof JsonProcessingException unreadable) {
            // How Quarkus REST reports a body that is not JSON at all.
            return unreadableBody(unreadable);
        }
        int status = e.getResponse().getStatus();
        Response.StatusType type = e.getResponse().getStatusInfo();
        return Problem.response(status, type.getReasonPhrase(), e.getMessage());
    }

    /**
     * Anything else is our fault. A request that got no database connection ran nothing: 503 with
     * {@code Retry-After} ({@link NoDatabaseConnection}). Otherwise whether the transaction committed is not
     * known here (a connection lost during COMMIT fails the request after the database may have committed
     * it), so the client is told so, and how to find out safely: retry with the same key.
     */
    @ServerExceptionMapper
    public Response unexpected(Exception e) {
        Optional<String> noConnection = NoDatabaseConnection.reason(e);
        if (noConnection.isPresent()) {
            Log.warnf("Request refused with 503, nothing written: %s (%s)", noConnection.get(), e);
            return Response.fromResponse(Problem.response(503, "Service Unavailable", "Nothing was done: "
                            + noConnection.get() + ". Try again in " + RETRY_AFTER_SECONDS + " s; a POST with the same"
                            + " Idempotency-Key never places a second order."))
                    .header("Retry-After", RETRY_AFTER_SECONDS).build();
        }
        Log.error("Request failed; whether its transaction committed is unknown", e);
        return Problem.response(500, "Internal error",
                "The request failed, and whether the order was placed is unknown. Retry with the same Idempotency-Key:"
                        + " if it was placed you get that order back, never a second one. Without an Idempotency-Key,"
                        + " a retry may place a second order.");
    }

    /** {@code place.request.lines[0].quantity} → {@code lines[0].quantity}: the path inside the body. */
    private static String field(ConstraintViolation<?> violation) {
        String[] path = violation.getPropertyPath().toString().replace(".<list element>", "").split("\\.", 3);
        return path.length < 3 ? "body" : path[2];
    }

    private static String jsonPath(List<JsonMappingException.Reference> path) {
        StringBuilder field = new StringBuilder();
        for (JsonMappingException.Reference ref : path) {
            if (ref.getFieldName() != null) {
                if (!field.isEmpty()) {
                    field.append('.');
                }
                field.append(ref.getFieldName());
            } else if (ref.getIndex() >= 0) {
                field.append('[').append(ref.getIndex()).append(']');
            }
        }
        return field.isEmpty() ? "body" : field.toString();
    }
}
