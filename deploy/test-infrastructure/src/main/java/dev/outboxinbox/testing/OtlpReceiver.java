package dev.outboxinbox.testing;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;

/**
 * A trace collector for tests: it takes OTLP over HTTP ({@code POST /v1/traces}, protobuf, what the
 * services' exporter sends with {@code OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf}) and keeps each span's
 * service, trace id, span id, parent and name. It reads only those fields of the protobuf
 * ({@code ExportTraceServiceRequest → ResourceSpans → ScopeSpans → Span}) and skips the rest by wire type.
 */
public final class OtlpReceiver implements AutoCloseable {

    /** One exported span. {@code parentSpanId} is empty for a root span. */
    public record ReceivedSpan(String service, String traceId, String spanId, String parentSpanId, String name, int kind) {
    }

    private final HttpServer server;
    private final List<ReceivedSpan> spans = new CopyOnWriteArrayList<>();

    private OtlpReceiver(HttpServer server) {
        this.server = server;
    }

    public static OtlpReceiver start() throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        OtlpReceiver receiver = new OtlpReceiver(server);
        server.createContext("/", exchange -> {
            try (InputStream raw = exchange.getRequestBody()) {
                byte[] body = raw.readAllBytes();
                if ("gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))) {
                    body = new GZIPInputStream(new ByteArrayInputStream(body)).readAllBytes();
                }
                if (exchange.getRequestURI().getPath().endsWith("/v1/traces")) {
                    receiver.spans.addAll(parseRequest(body));
                }
                exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
                exchange.sendResponseHeaders(200, -1); // an empty ExportTraceServiceResponse: all accepted
            } catch (RuntimeException malformed) {
                exchange.sendResponseHeaders(400, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
        return receiver;
    }

    /** What to give a service as OTEL_EXPORTER_OTLP_ENDPOINT (with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf). */
    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    public List<ReceivedSpan> spans() {
        return List.copyOf(spans);
    }

    /** The spans of one trace. */
    public List<ReceivedSpan> trace(String traceId) {
        return spans.stream().filter(span -> span.traceId().equals(traceId)).toList();
    }

    @Override
    public void close() {
        server.stop(0);
    }

    static List<ReceivedSpan> parseRequest(byte[] request) {
        List<ReceivedSpan> parsed = new ArrayList<>();
        for (Field resourceSpans : fields(request)) {
            if (resourceSpans.number() != 1) {
                continue;
            }
            String service = "";
            List<byte[]> scopeSpans = new ArrayList<>();
            for (Field field : fields(resourceSpans.bytes())) {
                if (field.number() == 1) {
                    service = serviceName(field.bytes());
                } else if (field.number() == 2) {
                    scopeSpans.add(field.bytes());
                }
            }
            for (byte[] scope : scopeSpans) {
                for (Field span : fields(scope)) {
                    if (span.number() == 2) {
                        parsed.add(span(service, span.bytes()));
                    }
                }
            }
        }
        return parsed;
    }

    private static String serviceName(byte[] resource) {
        for (Field attribute : fields(resource)) {
            if (attribute.number() != 1) {
                continue;
            }
            String key = null;
            String value = null;
            for (Field field : fields(attribute.bytes())) {
                if (field.number() == 1) {
                    key = field.text();
                } else if (field.number() == 2) {
                    for (Field any : fields(field.bytes())) {
                        if (any.number() == 1) {
                            value = any.text();
                        }
                    }
                }
            }
            if ("service.name".equals(key)) {
                return value;
            }
        }
        return "";
    }

    private static ReceivedSpan span(String service, byte[] span) {
        String traceId = "";
        String spanId = "";
        String parent = "";
        String name = "";
        int kind = 0;
        for (Field field : fields(span)) {
            switch (field.number()) {
                case 1 -> traceId = HexFormat.of().formatHex(field.bytes());
                case 2 -> spanId = HexFormat.of().formatHex(field.bytes());
                case 4 -> parent = HexFormat.of().formatHex(field.bytes());
                case 5 -> name = field.text();
                case 6 -> kind = (int) field.varint();
                default -> { }
            }
        }
        return new ReceivedSpan(service, traceId, spanId, parent, name, kind);
    }

    /** One protobuf field: its number, and its value as a varint or as bytes (length-delimited). */
    private record Field(int number, long varint, byte[] bytes) {
        String text() {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    }

    private static List<Field> fields(byte[] message) {
        List<Field> fields = new ArrayList<>();
        ByteBuffer in = ByteBuffer.wrap(message).order(ByteOrder.LITTLE_ENDIAN);
        while (in.hasRemaining()) {
            long key = varint(in);
            int number = (int) (key >>> 3);
            switch ((int) (key & 7)) {
                case 0 -> fields.add(new Field(number, varint(in), null));
                case 1 -> fields.add(new Field(number, in.getLong(), null));
                case 2 -> {
                    byte[] bytes = new byte[(int) varint(in)];
                    in.get(bytes);
                    fields.add(new Field(number, 0, bytes));
                }
                case 5 -> fields.add(new Field(number, in.getInt(), null));
                default -> throw new IllegalArgumentException("unsupported protobuf wire type " + (key & 7));
            }
        }
        return fields;
    }

    private static long varint(ByteBuffer in) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = in.get();
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("malformed varint");
    }
}
