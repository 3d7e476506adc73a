package dev.outboxinbox.order.demo;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import org.eclipse.microprofile.openapi.annotations.Operation;

/** {@code /demo} is the page's stable address; the page itself is {@code /demo/} (META-INF/resources/demo). */
@Path("/demo")
public class DemoPage {

    @GET
    @Operation(hidden = true) // the demo page's own, not an API for clients
    public Response page() {
        return Response.seeOther(URI.create("/demo/")).build();
    }
}
