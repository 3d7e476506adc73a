package dev.outboxinbox.inbox;

import io.opentelemetry.context.Scope;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.narayana.jta.QuarkusTransactionException;
import jakarta.annotation.Priority;
import jakarta.interceptor.AroundInvoke;
import jakarta.interceptor.Interceptor;
import jakarta.interceptor.InvocationContext;

/**
 * The idempotent consumer around one {@code @Incoming} method: in one transaction, insert the
 * message id first, and call the method only if the insert added it. Inside {@code @Transactional}
 * (priority 200 after PLATFORM_BEFORE) when a method has both, so it joins that transaction. The
 * message's trace is the current context while the method runs ({@link InboxMetadata#traceparent()}):
 * a reply it sends through the outbox emitter continues the incoming message's trace, and a span the
 * method starts is the consumer span's child. (The current span is that span's context, not the span:
 * attributes set on {@code Span.current()} are not recorded.)
 */
@Inbox
@Interceptor
@Priority(Interceptor.Priority.PLATFORM_BEFORE + 300)
class InboxInterceptor {

    private final InboxHandler inbox;
    private final boolean deduplicate;

    InboxInterceptor(InboxHandler inbox, DeduplicationGuard deduplication) {
        this.inbox = inbox;
        this.deduplicate = deduplication.deduplicating();
    }

    @AroundInvoke
    Object claimFirst(InvocationContext invocation) throws Exception {
        InboxMetadata metadata = metadataOf(invocation);
        try (Scope trace = InboxTracing.makeCurrent(metadata.traceparent())) {
            return QuarkusTransaction.joiningExisting().call(() -> {
                boolean added = inbox.claim(metadata.consumer(), metadata.messageId(), metadata.type());
                metadata.claimed(added);
                if (!added && deduplicate) {
                    metadata.markDuplicate();
                    return null;
                }
                return invocation.proceed();
            });
        } catch (QuarkusTransactionException e) {
            // A checked exception of the method (RejectedMessageException) arrives wrapped: unwrap it,
            // the connector reads it to dead-letter at once.
            if (e.getCause() instanceof Exception cause && !(cause instanceof RuntimeException)) {
                throw cause;
            }
            throw e;
        }
    }

    private static InboxMetadata metadataOf(InvocationContext invocation) {
        for (Object parameter : invocation.getParameters()) {
            if (parameter instanceof InboxMetadata metadata) {
                return metadata;
            }
        }
        throw new IllegalStateException("@Inbox method " + invocation.getMethod() + " has no InboxMetadata parameter"
                + " (or its message came from a channel not bound to the inbox connector): without the message id"
                + " the inbox cannot deduplicate, so the method is not called");
    }
}
