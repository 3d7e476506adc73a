package dev.outboxinbox.order.demo;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.Response;
import java.net.URI;

/** {@code /demo} is the page's stable address; the page itself is {@code /demo/} (META-INF/resources/demo). */
@Path("/demo")
public class DemoPage {

    @GET
    public Response page() {
        return Response.seeOther(URI.create("/demo/")).build();
    }
}
