package dev.outboxinbox.inbox;

import io.opentelemetry.context.Scope;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.narayana.jta.QuarkusTransactionException;
import jakarta.annotation.Priority;
import jakarta.interceptor.AroundInvoke;
import jakarta.interceptor.Interceptor;
import jakarta.interceptor.InvocationContext;

/**
 * The idempotent consumer around one {@code @Incoming} method. On an inbox channel the method joins
 * the channel's transaction, in which the message's key was claimed (inserted first) with the rest of
 * its batch, and is called only for a message that claim added ({@link ChannelSink}: a copy never
 * reaches it); the channel commits, then acks. Called any other way (a test calling the method with an
 * {@link InboxMetadata} it made), it claims the key itself, in the caller's transaction or one of its
 * own, and calls the method only if the insert added it. ({@code @Transactional} on an {@code @Inbox}
 * method is refused at start, {@link InboxMethods}: it would open a transaction of its own.) The
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
        ChannelTransaction batch = metadata.transaction();
        try (Scope trace = InboxTracing.makeCurrent(metadata.traceparent())) {
            if (batch != null) {
                // The channel claimed the key already, with the rest of its batch: join, apply, leave; it commits.
                if (!batch.join()) {
                    return null; // an earlier message of the batch failed: it rolls back, this one is offered again
                }
                metadata.joined();
                try {
                    return invocation.proceed();
                } finally {
                    batch.leave();
                }
            }
            return claimAndApply(invocation, metadata);
        }
    }

    /** Called outside a channel (a test calling the method): its own transaction, or the caller's. */
    private Object claimAndApply(InvocationContext invocation, InboxMetadata metadata) throws Exception {
        try {
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
